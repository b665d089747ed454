package chaos

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tenure-dev/tenure"
	internalplant "github.com/tenure-dev/tenure/internal/plant"
)

// Plants are the known bugs a node can be built with, to prove that the
// checkers catch them.
const (
	// PlantNone: the node as shipped.
	PlantNone = ""
	// PlantNoToken: the node presents no fencing token; it writes through the
	// register's unfenced path, so nothing stops a stale write. Caught by the
	// stale-write and linearizability checkers (pauses with a write in
	// flight).
	PlantNoToken = "no-token"
	// PlantReplyDeadline: the local deadline is measured from the reply
	// instead of the send: the reported TTL grows by the round trip. Caught
	// by the lease-overrun checker (latency on replies).
	PlantReplyDeadline = internalplant.ReplyDeadline
	// PlantNoMargin: no safety margin and no drift allowance: the reported
	// TTL is inflated so that TTL'·(1−MaxDrift) − Margin = TTL. Caught by the
	// lease-overrun checker (a write checked just before the deadline lands
	// after it).
	PlantNoMargin = internalplant.NoMargin
	// PlantRenewAfterExpiry: renewal allowed after expiry: a renewal that
	// fails or reports the grant lost is reported renewed (re-acquiring
	// quietly when the key is free), so the old term carries on. Caught by
	// the overlap and lease-overrun checkers (partitions of the leader).
	PlantRenewAfterExpiry = internalplant.RenewAfterExpiry
)

// Plants lists every planted bug.
func Plants() []string {
	return []string{PlantNoToken, PlantReplyDeadline, PlantNoMargin, PlantRenewAfterExpiry}
}

// CheckPlant returns an error naming p if it is not a known plant.
func CheckPlant(p string) error {
	if p == PlantNone {
		return nil
	}
	for _, q := range Plants() {
		if p == q {
			return nil
		}
	}
	return fmt.Errorf("chaos: unknown planted bug %q (want one of %v)", p, Plants())
}

// passthrough forwards Watch to the inner coordinator, so that wrappers keep
// the elector's watch-driven campaign.
type passthrough struct{ tenure.Coordinator }

func (c passthrough) Watch(ctx context.Context, key string) (<-chan tenure.LeaderEvent, error) {
	if w, ok := c.Coordinator.(tenure.Watcher); ok {
		return w.Watch(ctx, key)
	}
	return nil, errors.New("chaos: coordinator cannot watch")
}

// recorder reports every acquire, renew and release with its send and reply
// times and the TTL the coordinator really granted.
type recorder struct {
	passthrough
	out *eventWriter
}

func (c recorder) Acquire(ctx context.Context, key, holder string, ttl time.Duration) (tenure.Grant, error) {
	sent := Mono()
	g, err := c.Coordinator.Acquire(ctx, key, holder, ttl)
	ev := Event{Kind: KindAcquire, Sent: sent, OK: err == nil, Token: g.Token, TTL: g.TTL}
	if err != nil {
		ev.Err = err.Error()
	}
	c.out.emit(ev)
	return g, err
}

func (c recorder) Renew(ctx context.Context, g tenure.Grant) (tenure.Grant, error) {
	sent := Mono()
	r, err := c.Coordinator.Renew(ctx, g)
	ev := Event{Kind: KindRenew, Sent: sent, OK: err == nil, Token: g.Token, TTL: r.TTL, Lost: errors.Is(err, tenure.ErrLost)}
	if err != nil {
		ev.Err = err.Error()
	}
	c.out.emit(ev)
	return r, err
}

func (c recorder) Release(ctx context.Context, g tenure.Grant) error {
	sent := Mono()
	err := c.Coordinator.Release(ctx, g)
	ev := Event{Kind: KindRelease, Sent: sent, OK: err == nil, Token: g.Token}
	if err != nil {
		ev.Err = err.Error()
	}
	c.out.emit(ev)
	return err
}

// plant wraps c with the coordinator-side part of bug p (PlantNoToken is
// node-side: see node.go).
func plant(c tenure.Coordinator, p string, cfg tenure.Config) tenure.Coordinator {
	return internalplant.Wrap(c, p, cfg)
}
