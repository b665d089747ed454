package prom

import (
	"errors"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/fence"
)

// FenceObserver returns a function for fence.WithObserver that counts, in
// tenure_stale_rejections_total{resource}, every token the fence or
// register rejects as stale. resource names the guarded resource; choose
// it from a fixed set (a table, a service), never from request data.
//
//	reg := fence.NewRegister[string](fence.WithObserver(m.FenceObserver("orders")))
func (m *Metrics) FenceObserver(resource string) func(fence.Event) {
	c := m.stale.WithLabelValues(resource)
	return func(ev fence.Event) {
		if !ev.Accepted && errors.Is(ev.Err, tenure.ErrStaleToken) {
			c.Inc()
		}
	}
}

// ObserveGuard counts err in tenure_stale_rejections_total{resource} when
// it is a stale-token rejection (tenure.IsStale), and returns err
// unchanged. Wrap the guards that report through errors, such as
// etcd.FencedPut or postgres.FenceUpdate:
//
//	err = m.ObserveGuard("shard_assignment", postgres.FenceUpdate(ctx, db, ...))
func (m *Metrics) ObserveGuard(resource string, err error) error {
	if tenure.IsStale(err) {
		m.stale.WithLabelValues(resource).Inc()
	}
	return err
}
