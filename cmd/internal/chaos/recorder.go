package chaos

import (
	"context"
	"errors"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/history"
	"github.com/tenure-dev/tenure/internal/plant"
)

// recorder reports every acquire, renew and release with its send and reply
// times, the TTL the coordinator really granted, and the rate of the node's
// clock its lease is counted at (from clocked, through the call's context).
// The send is the call's, or that of the write that started or extended
// the lease when the coordinator's client reports its writes (writeSends).
type recorder struct {
	plant.Passthrough
	out *eventWriter
}

func (c recorder) Acquire(ctx context.Context, key, holder string, ttl time.Duration) (tenure.Grant, error) {
	ctx, ws := withSends(ctx)
	sent := Mono()
	g, err := c.Coordinator.Acquire(ctx, key, holder, ttl)
	ev := history.Event{Kind: history.KindAcquire, Sent: ws.start(sent), OK: err == nil, Token: g.Token, TTL: g.TTL, Rate: rateOf(ctx)}
	if err != nil {
		ev.Err = err.Error()
	}
	c.out.emit(ev)
	return g, err
}

func (c recorder) Renew(ctx context.Context, g tenure.Grant) (tenure.Grant, error) {
	ctx, ws := withSends(ctx)
	sent := Mono()
	r, err := c.Coordinator.Renew(ctx, g)
	ev := history.Event{Kind: history.KindRenew, Sent: ws.start(sent), OK: err == nil, Token: g.Token, TTL: r.TTL, Lost: errors.Is(err, tenure.ErrLost), Rate: rateOf(ctx)}
	if err != nil {
		ev.Err = err.Error()
	}
	c.out.emit(ev)
	return r, err
}

func (c recorder) Release(ctx context.Context, g tenure.Grant) error {
	sent := Mono()
	err := c.Coordinator.Release(ctx, g)
	ev := history.Event{Kind: history.KindRelease, Sent: sent, OK: err == nil, Token: g.Token}
	if err != nil {
		ev.Err = err.Error()
	}
	c.out.emit(ev)
	return err
}
