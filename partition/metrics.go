package partition

import "time"

// MoveReason says why a partition changed hands.
type MoveReason string

// The reasons a member gives up or takes a partition.
const (
	// MoveClaimed: the member claimed a free partition.
	MoveClaimed MoveReason = "claimed"
	// MoveRebalanced: the member handed a partition over because the
	// assignment gives it to another member.
	MoveRebalanced MoveReason = "rebalanced"
	// MoveLeft: the member handed a partition over because it is leaving.
	MoveLeft MoveReason = "left"
	// MoveLost: the member's lease was lost or its local deadline passed.
	MoveLost MoveReason = "lost"
	// MoveFenced: a resource rejected the partition's token as stale; the
	// member claims it again after RetryPeriod.
	MoveFenced MoveReason = "fenced"
	// MoveReturned: the partition's function returned while it was owned;
	// the member claims it again after RetryPeriod.
	MoveReturned MoveReason = "returned"
)

// Stats describe the whole group as one member last read it.
type Stats struct {
	// Members is how many live members the group has: memberships of one
	// member ID count once.
	Members int
	// Unowned is how many partitions have no live owner.
	Unowned int
	// OldestUnowned is how long the partition unowned for longest has been
	// unowned, as far as this member has seen; 0 when all are owned.
	OldestUnowned time.Duration
	// Imbalance is the largest number of partitions one member owns divided
	// by the mean over members, P/N; 0 without members.
	Imbalance float64
}

// Metrics receives what a Group observes. Package prom implements it; the
// default discards everything. Implementations must be safe for concurrent
// use and must not block. Labels are the group and the reason, never the
// partition, so that series do not grow with P. Users set
// Config.Metrics to one (prom.NewPartition's, or their own).
type Metrics interface {
	// SetOwned records how many partitions this member owns.
	SetOwned(group string, owned int)
	// Moved counts a partition taken or given up, by reason.
	Moved(group string, reason MoveReason)
	// SetStats records the group as a whole, as this member last read it
	// (every RenewInterval, or every P/1000 seconds when that is longer,
	// only when Config.Metrics is set).
	SetStats(group string, s Stats)
}

// nopMetrics is a Metrics that discards everything, for a Config whose
// Metrics is nil.
type nopMetrics struct{}

// SetOwned does nothing.
func (nopMetrics) SetOwned(string, int) {}

// Moved does nothing.
func (nopMetrics) Moved(string, MoveReason) {}

// SetStats does nothing.
func (nopMetrics) SetStats(string, Stats) {}

var _ Metrics = nopMetrics{}
