package tenure

import "time"

// Metrics receives what an Elector observes. Package prom implements it
// with Prometheus collectors; the default discards everything.
// Implementations must be safe for concurrent use and must not block.
type Metrics interface {
	// SetLeader records whether this node leads key.
	SetLeader(key string, leading bool)
	// SetToken records the fencing token of the current term on key.
	SetToken(key string, token uint64)
	// TermBegan records that term t began. An implementation may keep t
	// until SetLeader(t.Key(), false) to read t.Remaining() when it is
	// asked (a Prometheus scrape), so that the lease left is reported as it
	// is then, not as it was at the last renewal.
	TermBegan(t *Term)
	// Transition counts a leadership transition of the given kind.
	Transition(key string, kind TransitionKind)
	// ObserveRenew records one renewal attempt: how long it took and whether
	// it failed (err is nil on success, wraps ErrLost when the grant was
	// gone).
	ObserveRenew(key string, took time.Duration, err error)
}

// nopMetrics is a Metrics that discards everything, for a Config whose
// Metrics is nil.
type nopMetrics struct{}

// SetLeader does nothing.
func (nopMetrics) SetLeader(string, bool) {}

// SetToken does nothing.
func (nopMetrics) SetToken(string, uint64) {}

// TermBegan does nothing.
func (nopMetrics) TermBegan(*Term) {}

// Transition does nothing.
func (nopMetrics) Transition(string, TransitionKind) {}

// ObserveRenew does nothing.
func (nopMetrics) ObserveRenew(string, time.Duration, error) {}

var _ Metrics = nopMetrics{}
