package cli

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/partition"
)

// denied reports whether err says the coordinator refused a request for
// want of a permission: a Kubernetes Forbidden (HTTP 403), etcd's
// "permission denied", PostgreSQL's insufficient privilege (42501).
// Waiting does not grant a permission; timeouts, 5xx answers and
// conflicts are not refusals.
func denied(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "42501"
	}
	return errors.Is(err, rpctypes.ErrPermissionDenied) || errors.Is(err, rpctypes.ErrGRPCPermissionDenied) ||
		apierrors.IsForbidden(err)
}

// stopOnDenial returns c with onDenied called, before the call returns,
// with the error of every call that tenure run cannot do without and that
// the coordinator refused for want of a permission (see denied): the
// writes of a campaign and of a lease (Acquire, Renew) and those of a
// partition group's member (JoinGroup, RenewMember, ClaimPartitions, and
// its reads GroupMembers and CheckPartitions). Releases, watches and the
// reads of status pages are not checked: tenure does without them. When
// c is a partition.Coordinator, so is the result (and a
// partition.MembersWatcher when c is one).
func stopOnDenial(c tenure.Coordinator, onDenied func(error)) tenure.Coordinator {
	d := &denialCheck{Coordinator: c, onDenied: onDenied}
	if gc, ok := c.(partition.Coordinator); ok {
		g := &denialCheckGroup{Coordinator: gc, d: d}
		if w, ok := c.(partition.MembersWatcher); ok {
			return &denialCheckWatchingGroup{denialCheckGroup: g, w: w}
		}
		return g
	}
	return d
}

// denialCheck is stopOnDenial's coordinator: c's calls, and onDenied.
type denialCheck struct {
	tenure.Coordinator
	onDenied func(error)
}

// check calls onDenied when err is a refusal, and returns err.
func (d *denialCheck) check(err error) error {
	if err != nil && denied(err) {
		d.onDenied(err)
	}
	return err
}

// Acquire calls the coordinator's Acquire and checks its error.
func (d *denialCheck) Acquire(ctx context.Context, key, holder string, ttl time.Duration) (tenure.Grant, error) {
	g, err := d.Coordinator.Acquire(ctx, key, holder, ttl)
	return g, d.check(err)
}

// Renew calls the coordinator's Renew and checks its error.
func (d *denialCheck) Renew(ctx context.Context, g tenure.Grant) (tenure.Grant, error) {
	g, err := d.Coordinator.Renew(ctx, g)
	return g, d.check(err)
}

// denialCheckGroup is stopOnDenial's partition.Coordinator.
type denialCheckGroup struct {
	partition.Coordinator
	d *denialCheck
}

// Acquire calls the coordinator's Acquire and checks its error.
func (g *denialCheckGroup) Acquire(ctx context.Context, key, holder string, ttl time.Duration) (tenure.Grant, error) {
	return g.d.Acquire(ctx, key, holder, ttl)
}

// Renew calls the coordinator's Renew and checks its error.
func (g *denialCheckGroup) Renew(ctx context.Context, gr tenure.Grant) (tenure.Grant, error) {
	return g.d.Renew(ctx, gr)
}

// JoinGroup calls the coordinator's JoinGroup and checks its error.
func (g *denialCheckGroup) JoinGroup(ctx context.Context, group, id string, ttl time.Duration, partitions int) (partition.Member, error) {
	m, err := g.Coordinator.JoinGroup(ctx, group, id, ttl, partitions)
	return m, g.d.check(err)
}

// RenewMember calls the coordinator's RenewMember and checks its error.
func (g *denialCheckGroup) RenewMember(ctx context.Context, m partition.Member) (partition.Member, error) {
	m, err := g.Coordinator.RenewMember(ctx, m)
	return m, g.d.check(err)
}

// GroupMembers calls the coordinator's GroupMembers and checks its error.
func (g *denialCheckGroup) GroupMembers(ctx context.Context, group string) ([]partition.Member, error) {
	ms, err := g.Coordinator.GroupMembers(ctx, group)
	return ms, g.d.check(err)
}

// ClaimPartitions calls the coordinator's ClaimPartitions and checks its
// error and each partition's.
func (g *denialCheckGroup) ClaimPartitions(ctx context.Context, m partition.Member, names []string) ([]partition.ClaimResult, error) {
	rs, err := g.Coordinator.ClaimPartitions(ctx, m, names)
	for _, r := range rs {
		if r.Err != nil && denied(r.Err) {
			g.d.onDenied(r.Err) // once: the first partition refused
			break
		}
	}
	return rs, g.d.check(err)
}

// CheckPartitions calls the coordinator's CheckPartitions and checks its
// error.
func (g *denialCheckGroup) CheckPartitions(ctx context.Context, m partition.Member, gs []tenure.Grant) ([]tenure.Grant, error) {
	lost, err := g.Coordinator.CheckPartitions(ctx, m, gs)
	return lost, g.d.check(err)
}

// denialCheckWatchingGroup is stopOnDenial's partition.MembersWatcher.
type denialCheckWatchingGroup struct {
	*denialCheckGroup
	w partition.MembersWatcher
}

// WatchMembers calls the coordinator's WatchMembers.
func (g *denialCheckWatchingGroup) WatchMembers(ctx context.Context, group string) (<-chan struct{}, error) {
	return g.w.WatchMembers(ctx, group)
}
