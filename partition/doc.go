// Package partition runs per-partition leadership: a group of members
// shares P named partitions of one key, each partition led by at most one
// member at a time, with its own term and fencing token, spread over the
// live members.
//
// # Assignment
//
// Every member reads the group's membership and partition table from the
// coordinator and computes the same assignment (Rebalance): each member
// keeps what it owns up to its quota (⌊P/N⌋ or ⌈P/N⌉), and the rest go by
// rendezvous hashing capped at the quotas, so that a join moves only the
// newcomer's share (about P/(N+1)) and a leave only the leaver's
// partitions, in one round; the result is a fixed point, and so is every
// state on the way to it, so members that read the table at different
// moments of a hand-over agree (they also compute it again every renewal
// interval). Members learn of joins and leaves at once from a coordinator
// that is a MembersWatcher (etcd, PostgreSQL), otherwise within
// Config.SyncInterval. A member claims the free partitions the latest
// membership gives it at once (an orphan of an expired member, or one a
// leaving member released), but hands a partition over only when the
// membership has been stable for Config.Debounce and both the settled and
// the latest membership give it to another member, so a flapping member
// moves nothing. A partition is released only after its function has
// returned (drained).
//
// # Partition count
//
// Every member of a group must run it with the same number of partitions
// P: members that disagree compute different assignments and leave
// partitions unowned. A member announces its P as it joins
// (Member.Partitions, recorded by the coordinator with the
// membership) and refuses to run beside a live member that announced
// another, until it has settled: see CountError.
//
// # Terms
//
// Each owned partition runs Func(ctx, p, term) in its own goroutine with a
// tenure.Term of its own: its token is greater than every token the
// partition's key had before, across members and restarts; its context
// ends at the member's local deadline, when the membership is lost, on a
// hand-over, or when the function reports a stale token
// (tenure.IsStale), which steps that partition down alone.
//
// # Renewal cost
//
// A member holds one lease (Coordinator) and every partition it
// owns lives exactly as long as that lease: renewing it is one write per
// member per renewal interval, whatever P is. On etcd every partition key
// is attached to the member's etcd lease; on PostgreSQL a partition's row
// names its owner's epoch, valid while the member's one row is live on the
// database's clock; the memory coordinator does the same in process. Claims
// and releases are batched. The membership is renewed on its own schedule
// (the Elector's), never waiting behind claims, releases, reads or the
// assignment. With each renewal the member checks, with one read whose work
// grows with the partitions it owns, not with P, that it still owns them
// (Coordinator.CheckPartitions, sent beside the renewal); a renewal extends
// their terms only when both answered: a partition an operator freed by
// hand (`tenure release --force`, etcdctl del, SQL) is run at most one
// renewal interval plus a round trip after, and never past a safe lease.
//
// # Status and metrics
//
// Group.Snapshot tells what one member runs; ReadTable reads the whole
// table (owner, token and lease left per partition, members, balance).
// Config.Metrics receives owned partitions, moves by
// reason and group-wide stats; package prom implements it.
package partition
