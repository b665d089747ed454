package prom

import (
	"context"
	"time"

	"github.com/tenure-dev/tenure/partition"

	"github.com/tenure-dev/tenure"
)

// Operations of partition groups counted in
// tenure_coordinator_errors_total{op}.
const (
	opJoinGroup         = "join_group"
	opRenewMember       = "renew_member"
	opLeaveGroup        = "leave_group"
	opGroupMembers      = "group_members"
	opClaimPartitions   = "claim_partitions"
	opReleasePartitions = "release_partitions"
	opGroupPartitions   = "group_partitions"
	opCheckPartitions   = "check_partitions"
	opWatchMembers      = "watch_members"
)

// instrumentedGroup is an instrumented coordinator that is also a
// partition.Coordinator, returned by Instrument when the coordinator it
// wraps is one.
type instrumentedGroup struct {
	*instrumented
	gc partition.Coordinator
}

var _ partition.Coordinator = (*instrumentedGroup)(nil)

// instrumentedWatchingGroup is an instrumentedGroup whose coordinator also
// tells members of joins and leaves at once: the wrapper must not hide
// that, or groups on it would fall back to polling.
type instrumentedWatchingGroup struct {
	*instrumentedGroup
	w partition.MembersWatcher
}

var _ partition.MembersWatcher = (*instrumentedWatchingGroup)(nil)

// WatchMembers calls the coordinator's WatchMembers and counts its error.
func (i *instrumentedWatchingGroup) WatchMembers(ctx context.Context, group string) (<-chan struct{}, error) {
	ch, err := i.w.WatchMembers(ctx, group)
	return ch, i.count(opWatchMembers, err)
}

// JoinGroup calls the coordinator's JoinGroup and counts its error.
func (i *instrumentedGroup) JoinGroup(ctx context.Context, group, id string, ttl time.Duration, partitions int) (partition.Member, error) {
	m, err := i.gc.JoinGroup(ctx, group, id, ttl, partitions)
	return m, i.count(opJoinGroup, err)
}

// RenewMember calls the coordinator's RenewMember and counts its error (a
// lost membership is an outcome, not counted).
func (i *instrumentedGroup) RenewMember(ctx context.Context, m partition.Member) (partition.Member, error) {
	m, err := i.gc.RenewMember(ctx, m)
	return m, i.count(opRenewMember, err)
}

// LeaveGroup calls the coordinator's LeaveGroup and counts its error.
func (i *instrumentedGroup) LeaveGroup(ctx context.Context, m partition.Member) error {
	return i.count(opLeaveGroup, i.gc.LeaveGroup(ctx, m))
}

// GroupMembers calls the coordinator's GroupMembers and counts its error.
func (i *instrumentedGroup) GroupMembers(ctx context.Context, group string) ([]partition.Member, error) {
	ms, err := i.gc.GroupMembers(ctx, group)
	return ms, i.count(opGroupMembers, err)
}

// ClaimPartitions calls the coordinator's ClaimPartitions and counts its
// error, and each partition's error other than *tenure.HeldError.
func (i *instrumentedGroup) ClaimPartitions(ctx context.Context, m partition.Member, names []string) ([]partition.ClaimResult, error) {
	rs, err := i.gc.ClaimPartitions(ctx, m, names)
	if i.count(opClaimPartitions, err) == nil {
		for _, r := range rs {
			i.count(opClaimPartitions, r.Err)
		}
	}
	return rs, err
}

// ReleasePartitions calls the coordinator's ReleasePartitions and counts
// its error.
func (i *instrumentedGroup) ReleasePartitions(ctx context.Context, m partition.Member, gs []tenure.Grant) error {
	return i.count(opReleasePartitions, i.gc.ReleasePartitions(ctx, m, gs))
}

// CheckPartitions calls the coordinator's CheckPartitions and counts its
// error (a lost membership is an outcome, not counted).
func (i *instrumentedGroup) CheckPartitions(ctx context.Context, m partition.Member, gs []tenure.Grant) ([]tenure.Grant, error) {
	lost, err := i.gc.CheckPartitions(ctx, m, gs)
	return lost, i.count(opCheckPartitions, err)
}

// GroupPartitions calls the coordinator's GroupPartitions and counts its
// error.
func (i *instrumentedGroup) GroupPartitions(ctx context.Context, group string) ([]tenure.Grant, error) {
	gs, err := i.gc.GroupPartitions(ctx, group)
	return gs, i.count(opGroupPartitions, err)
}
