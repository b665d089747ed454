package tenure

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// A Member is one membership of one process in a partition group, as the
// coordinator granted or last renewed it. Every partition the member claims
// lives exactly as long as the membership: renewing the member renews them
// all, in one write, however many there are (the model is CockroachDB's
// epoch leases). Used by partition.Group; the backends return it.
type Member struct {
	// Group is the group's key: partition keys are PartitionKey(Group, name).
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
	// membership's lease was sent (see Grant.Sent). Set by JoinGroup and
	// RenewMember; zero in memberships read by GroupMembers.
	Sent Instant
	// Partitions is how many partitions the member runs the group with (P,
	// partition.Config.Partitions), as it announced it to JoinGroup; 0 when
	// it announced none. Coordinators record it with the membership and
	// report it in GroupMembers; they do not check it. Members that disagree
	// on P would leave partitions unowned, so package partition refuses to
	// run beside a live member that announced another P, and `tenure
	// status` shows the P the members announce.
	Partitions int
}

// String formats the member for logs.
func (m Member) String() string {
	return fmt.Sprintf("%q in %q (epoch %d, ttl %s)", m.ID, m.Group, m.Epoch, m.TTL)
}

// ClaimResult is the outcome of claiming one partition in a batch. Used by
// partition.Group; the backends return it from ClaimPartitions.
type ClaimResult struct {
	// Grant is the partition's grant to the member when Err is nil. Its TTL
	// and Sent are the member's.
	Grant Grant
	// Err is a *HeldError when another member owns the partition; any other
	// error means the outcome for this partition is unknown.
	Err error
}

// A GroupCoordinator is a Coordinator that can run partition groups (package
// partition): members that share the partitions of one group, each
// partition owned by at most one live member at a time, with its own
// fencing token, and every partition of a member alive exactly as long as
// the member's one lease.
//
// Partition keys are PartitionKey(group, name). A partition's token is
// greater than every token granted for it before, across members and
// coordinator restarts, as for any key. Used by partition.Group; etcd,
// postgres, kube and memory implement it.
type GroupCoordinator interface {
	// JoinGroup makes id a member of group with a lease of ttl, as a new
	// membership with a new epoch (an earlier membership of id is left to
	// expire or leave on its own), announcing that it runs the group with
	// partitions partitions (0: announces none): the coordinator records the
	// count with the membership, in the same write, and GroupMembers
	// reports it as Member.Partitions. Malformed groups, ids, TTLs and
	// counts are rejected with errors wrapping ErrInvalidKey,
	// ErrInvalidHolder, ErrInvalidTTL and ErrInvalidConfig.
	JoinGroup(ctx context.Context, group, id string, ttl time.Duration, partitions int) (Member, error)

	// RenewMember extends m's lease, and so every partition m owns, from
	// now on the coordinator's clock, in one write. A membership that
	// expired or left is reported with an error wrapping ErrLost and never
	// revived.
	RenewMember(ctx context.Context, m Member) (Member, error)

	// LeaveGroup ends m and every partition it still owns now. Leaving a
	// membership that is already gone is not an error.
	LeaveGroup(ctx context.Context, m Member) error

	// GroupMembers returns the live members of group, sorted by ID, each
	// with the Partitions it announced (0 if none). A member's TTL is the
	// time left on its lease where the backend reads it with the membership
	// (memory, PostgreSQL), and the TTL granted where that would take a
	// round trip per member (etcd). Every member calls it often, so it
	// costs one read.
	GroupMembers(ctx context.Context, group string) ([]Member, error)

	// ClaimPartitions claims the named partitions of m's group for m, in as
	// few round trips as the backend allows, and returns one result per
	// name, in order. A partition that is free (never owned, released, or
	// its owner's membership expired) is granted with a new token; one that
	// m already owns is returned as it is; one that another live member owns
	// gets a *HeldError. If m itself has expired or left, the error wraps
	// ErrLost and nothing is claimed.
	ClaimPartitions(ctx context.Context, m Member, names []string) ([]ClaimResult, error)

	// ReleasePartitions frees the partitions of gs that m still owns with
	// their tokens, in as few round trips as the backend allows, so that
	// other members can claim them without waiting for m's lease. Grants
	// already gone are skipped without error.
	ReleasePartitions(ctx context.Context, m Member, gs []Grant) error

	// CheckPartitions returns the grants of gs, which ClaimPartitions gave
	// m, that m no longer owns with their tokens: freed or taken by someone other than
	// m itself (an operator's `tenure release --force`, etcdctl del, an
	// UPDATE of the partition table), and perhaps claimed by another member
	// since. Members call it every renewal, so it costs one read whatever
	// len(gs) is, and its work grows with len(gs), never with the group's
	// partition count. If m itself has expired or left, the error wraps
	// ErrLost.
	CheckPartitions(ctx context.Context, m Member, gs []Grant) (lost []Grant, err error)

	// GroupPartitions returns the live grants on group's partitions, sorted
	// by key, each with the time left on its owner's lease as TTL (rounded
	// down to whole seconds on etcd). Free partitions are left out.
	GroupPartitions(ctx context.Context, group string) ([]Grant, error)
}

// A MembersWatcher is a GroupCoordinator that tells members at once when a
// group's membership may have changed, so that a planned leave is acted on
// without waiting for the next poll (partition.Config.SyncInterval). It is
// an optional capability, found by type assertion; the etcd and postgres
// coordinators have it, and wrappers (prom.Instrument) keep it. Used by
// partition.Group.
type MembersWatcher interface {
	// WatchMembers returns a channel that receives a value soon after group
	// gains or loses a member (values are coalesced: one pending value
	// stands for any number of changes), and one at the start. It is
	// closed when ctx ends, when the coordinator is closed, or when the
	// watch fails; callers then poll, and may watch again.
	WatchMembers(ctx context.Context, group string) (<-chan struct{}, error)
}

// ValidateJoin reports whether JoinGroup can make id a member of group with
// a lease of ttl, announcing partitions partitions (see
// GroupCoordinator.JoinGroup). The error wraps ErrInvalidKey,
// ErrInvalidHolder, ErrInvalidTTL or ErrInvalidConfig. Called by every
// backend's JoinGroup.
func ValidateJoin(group, id string, ttl time.Duration, partitions int) error {
	if err := ValidateKey(group); err != nil {
		return err
	}
	if err := ValidateHolder(id); err != nil {
		return err
	}
	if err := ValidateTTL(ttl); err != nil {
		return err
	}
	if partitions < 0 {
		return fmt.Errorf("%w: member %q of %q announces %d partitions; want 0 or more", ErrInvalidConfig, id, group, partitions)
	}
	return nil
}

// PartitionKey is the key of partition name in group: "group/name". Used by
// the backends and partition, and by users who look a partition up with
// Leader or `tenure status`.
func PartitionKey(group, name string) string { return group + "/" + name }

// ValidatePartitionName reports whether name can name a partition: one path
// element of a key (bytes of [A-Za-z0-9._-], not "." or "..", no '/'). The
// error wraps ErrInvalidKey. Called by the backends' ClaimPartitions and by
// partition.
func ValidatePartitionName(name string) error {
	if strings.Contains(name, "/") {
		return fmt.Errorf("%w: partition name %q must not contain '/'", ErrInvalidKey, name)
	}
	if err := ValidateKey(name); err != nil {
		return fmt.Errorf("partition name: %w", err)
	}
	return nil
}

// ValidateGroup reports whether group can be a partition group's key with
// partitions of names up to nameLen bytes. The error wraps ErrInvalidKey.
// Called by partition, kube and the tenure command.
func ValidateGroup(group string, nameLen int) error {
	if err := ValidateKey(group); err != nil {
		return fmt.Errorf("group: %w", err)
	}
	if n := len(group) + 1 + nameLen; n > MaxKeyLen {
		return fmt.Errorf("%w: group %q with partition names of %d bytes makes keys of %d bytes, at most %d allowed", ErrInvalidKey, group, nameLen, n, MaxKeyLen)
	}
	return nil
}
