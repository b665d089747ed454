package partition

import (
	"context"
	"fmt"
	"time"

	"github.com/tenure-dev/tenure"
)

// A Member is one membership of one process in a partition group, as the
// coordinator granted or last renewed it. Every partition the member claims
// lives exactly as long as the membership: renewing the member renews them
// all, in one write, however many there are (the model is CockroachDB's
// epoch leases). A Coordinator returns it.
type Member struct {
	// Group is the group's key: partition keys are Key(Group, name).
	Group string
	// ID is the member's holder identity ("name#instance").
	ID string
	// Epoch tells this membership apart from every earlier one of the same
	// ID (the etcd lease, the PostgreSQL epoch row). It is never 0.
	Epoch uint64
	// TTL is the membership's lease as the coordinator granted it, on its own
	// clock, counted from no earlier than Sent.
	TTL time.Duration
	// Sent is when the request that last started or extended the
	// membership's lease was sent (see tenure.Grant.Sent). Set by JoinGroup and
	// RenewMember; zero in memberships read by GroupMembers.
	Sent tenure.Instant
	// Partitions is how many partitions the member runs the group with (P,
	// Config.Partitions), as it announced it to JoinGroup; 0 when
	// it announced none. Coordinators record it with the membership and
	// report it in GroupMembers; they do not check it. Members that disagree
	// on P would leave partitions unowned, so a Group refuses to run beside
	// a live member that announced another P.
	Partitions int
}

// String formats the member for logs.
func (m Member) String() string {
	return fmt.Sprintf("%q in %q (epoch %d, ttl %s)", m.ID, m.Group, m.Epoch, m.TTL)
}

// ClaimResult is the outcome of claiming one partition in a batch, as
// Coordinator.ClaimPartitions returns it.
type ClaimResult struct {
	// Grant is the partition's grant to the member when Err is nil. Its TTL
	// and Sent are the member's.
	Grant tenure.Grant
	// Err is a *tenure.HeldError when another member owns the partition; any other
	// error means the outcome for this partition is unknown.
	Err error
}

// A Coordinator is a tenure.Coordinator that can run partition groups:
// members that share the partitions of one group, each
// partition owned by at most one live member at a time, with its own
// fencing token, and every partition of a member alive exactly as long as
// the member's one lease.
//
// Partition keys are Key(group, name). A partition's token is greater than
// every token granted for it before, across members and coordinator
// restarts, as for any key. The etcd, postgres, kube and memory
// coordinators implement it.
type Coordinator interface {
	tenure.Coordinator

	// JoinGroup makes id a member of group with a lease of ttl, as a new
	// membership with a new epoch (an earlier membership of id is left to
	// expire or leave on its own), announcing that it runs the group with
	// partitions partitions (0: announces none): the coordinator records the
	// count with the membership, in the same write, and GroupMembers
	// reports it as Member.Partitions. Malformed groups, ids, TTLs and
	// counts are rejected with errors wrapping tenure.ErrInvalidKey,
	// tenure.ErrInvalidHolder, tenure.ErrInvalidTTL and tenure.ErrInvalidConfig.
	JoinGroup(ctx context.Context, group, id string, ttl time.Duration, partitions int) (Member, error)

	// RenewMember extends m's lease, and so every partition m owns, from
	// now on the coordinator's clock, in one write. A membership that
	// expired or left is reported with an error wrapping tenure.ErrLost and never
	// revived.
	RenewMember(ctx context.Context, m Member) (Member, error)

	// LeaveGroup ends m and every partition it still owns now. Leaving a
	// membership that is already gone is not an error.
	LeaveGroup(ctx context.Context, m Member) error

	// GroupMembers returns the live members of group, sorted by ID, each
	// with the Partitions it announced (0 if none) and the TTL its lease
	// was granted (not the time left: a listing is not a renewal). Every
	// member calls it often, so it costs one read.
	GroupMembers(ctx context.Context, group string) ([]Member, error)

	// ClaimPartitions claims the named partitions of m's group for m, in as
	// few round trips as the backend allows, and returns one result per
	// name, in order. A partition that is free (never owned, released, or
	// its owner's membership expired) is granted with a new token; one that
	// m already owns is granted again with a new token, superseding m's grant
	// (as Acquire supersedes a holder's own grant), so that a release of the
	// old grant that arrives late frees nothing; one that another live member
	// owns gets a *tenure.HeldError. If m itself has expired or left, the error wraps
	// tenure.ErrLost and nothing is claimed. A name whose partition key
	// (Key(group, name)) would be longer than a key may be (200 bytes) is
	// refused with an error wrapping tenure.ErrInvalidKey.
	ClaimPartitions(ctx context.Context, m Member, names []string) ([]ClaimResult, error)

	// ReleasePartitions frees the partitions of gs that m still owns with
	// their tokens, in as few round trips as the backend allows, so that
	// other members can claim them without waiting for m's lease. Grants
	// already gone are skipped without error.
	ReleasePartitions(ctx context.Context, m Member, gs []tenure.Grant) error

	// CheckPartitions returns the grants of gs, which ClaimPartitions gave
	// m, that m no longer owns with their tokens: freed or taken by someone other than
	// m itself (an operator's `tenure release --force`, etcdctl del, an
	// UPDATE of the partition table), and perhaps claimed by another member
	// since. Members call it every renewal, so it costs one read whatever
	// len(gs) is, and its work grows with len(gs), never with the group's
	// partition count. A grant that m superseded by claiming its partition
	// again may be reported lost or not (etcd checks that the key is still
	// on m's lease, not its token): either way m owns the partition, with
	// the token of its latest claim. If m itself has expired or left, the
	// error wraps tenure.ErrLost.
	CheckPartitions(ctx context.Context, m Member, gs []tenure.Grant) (lost []tenure.Grant, err error)

	// GroupPartitions returns the live grants on group's partitions, sorted
	// by key, each with the time left on its owner's lease as TTL (rounded
	// down to whole seconds on etcd). Free partitions are left out.
	GroupPartitions(ctx context.Context, group string) ([]tenure.Grant, error)
}

// A MembersWatcher is a Coordinator that tells members at once when a
// group's membership may have changed, so that a planned leave is acted on
// without waiting for the next poll (Config.SyncInterval). It is an
// optional capability, found by type assertion; the etcd and postgres
// coordinators have it, and prom.Instrument keeps it when its coordinator
// has it.
type MembersWatcher interface {
	// WatchMembers returns a channel that receives a value soon after group
	// gains or loses a member (values are coalesced: one pending value
	// stands for any number of changes), and one at the start. It is
	// closed when ctx ends, when the coordinator is closed, or when the
	// watch fails; callers then poll, and may watch again.
	WatchMembers(ctx context.Context, group string) (<-chan struct{}, error)
}

// Key is the key of partition name in group: "group/name", the key of
// its leadership for Coordinator.Leader.
func Key(group, name string) string { return group + "/" + name }
