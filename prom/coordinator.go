package prom

import (
	"context"
	"errors"
	"time"

	"github.com/tenure-dev/tenure/partition"

	"github.com/tenure-dev/tenure"
)

// Operations counted in tenure_coordinator_errors_total{op}.
const (
	opAcquire = "acquire"
	opRenew   = "renew"
	opRelease = "release"
	opLeader  = "leader"
	opWatch   = "watch"
	opList    = "list"
)

// Instrument returns c with every failed call counted in
// tenure_coordinator_errors_total{op}. A key held by another node
// (tenure.ErrHeld), a lost grant (tenure.ErrLost) and a call cancelled by
// its caller are outcomes, not errors, and are not counted. For a
// coordinator that runs partition groups, InstrumentGroup returns one a
// partition.Group can run on.
func (m *Metrics) Instrument(c tenure.Coordinator) tenure.Coordinator {
	if gc, ok := c.(partition.Coordinator); ok {
		return m.InstrumentGroup(gc)
	}
	return &instrumented{c: c, m: m}
}

// InstrumentGroup is Instrument for a coordinator that runs partition
// groups: the failed calls of partition groups are counted too (under
// join_group, renew_member, leave_group, group_members, claim_partitions,
// release_partitions, check_partitions, group_partitions and
// watch_members), and the result is a partition.MembersWatcher when c is
// one.
func (m *Metrics) InstrumentGroup(c partition.Coordinator) partition.Coordinator {
	g := &instrumentedGroup{instrumented: &instrumented{c: c, m: m}, gc: c}
	if w, ok := c.(partition.MembersWatcher); ok {
		return &instrumentedWatchingGroup{instrumentedGroup: g, w: w}
	}
	return g
}

type instrumented struct {
	c tenure.Coordinator
	m *Metrics
}

var ()

// count counts err under op unless it is an outcome or a cancellation.
func (i *instrumented) count(op string, err error) error {
	if err != nil && !errors.Is(err, tenure.ErrHeld) && !errors.Is(err, tenure.ErrLost) && !errors.Is(err, context.Canceled) {
		i.m.coordErrors.WithLabelValues(op).Inc()
	}
	return err
}

// Acquire calls the coordinator's Acquire and counts its error.
func (i *instrumented) Acquire(ctx context.Context, key, holder string, ttl time.Duration) (tenure.Grant, error) {
	g, err := i.c.Acquire(ctx, key, holder, ttl)
	return g, i.count(opAcquire, err)
}

// Renew calls the coordinator's Renew and counts its error.
func (i *instrumented) Renew(ctx context.Context, g tenure.Grant) (tenure.Grant, error) {
	g, err := i.c.Renew(ctx, g)
	return g, i.count(opRenew, err)
}

// Release calls the coordinator's Release and counts its error.
func (i *instrumented) Release(ctx context.Context, g tenure.Grant) error {
	return i.count(opRelease, i.c.Release(ctx, g))
}

// Leader calls the coordinator's Leader and counts its error.
func (i *instrumented) Leader(ctx context.Context, key string) (tenure.Grant, bool, error) {
	g, ok, err := i.c.Leader(ctx, key)
	return g, ok, i.count(opLeader, err)
}

// Close closes the coordinator.
func (i *instrumented) Close() error { return i.c.Close() }

// Watch calls the coordinator's Watch.
func (i *instrumented) Watch(ctx context.Context, key string) (<-chan tenure.LeaderEvent, error) {
	ch, err := i.c.Watch(ctx, key)
	return ch, i.count(opWatch, err)
}

// List calls the coordinator's List.
func (i *instrumented) List(ctx context.Context, prefix string) ([]tenure.Grant, error) {
	gs, err := i.c.List(ctx, prefix)
	return gs, i.count(opList, err)
}
