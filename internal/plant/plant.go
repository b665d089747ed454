// Package plant builds a coordinator with a known bug planted between it and
// an Elector, so that checkers can be shown to catch what they exist to
// catch. Both the in-process chaos tests of package tenure and tenure verify
// (package chaos) use it; it is never used on a real deployment.
//
// Each bug is a wrapper that changes only what the Elector sees: inflating
// the TTL a grant reports moves the local deadline exactly as far as the bug
// would, and a renewal reported successful when it failed carries a term on
// past its lease.
package plant

import (
	"context"
	"errors"
	"time"

	"github.com/tenure-dev/tenure"
)

// The bugs a coordinator wrapper can plant.
const (
	// ReplyDeadline: the local deadline is measured from the reply instead
	// of the send: the reported TTL grows by the call's round trip.
	ReplyDeadline = "reply-deadline"
	// NoMargin: no safety margin and no drift allowance: the reported TTL
	// is inflated so that TTL'·(1−MaxDrift) − Margin equals the real TTL.
	NoMargin = "no-margin"
	// RenewAfterExpiry: a renewal that fails or reports the grant lost is
	// reported renewed (re-acquiring quietly when the key is free), so the
	// old term carries on.
	RenewAfterExpiry = "renew-after-expiry"
)

// Wrap returns c with bug planted for an Elector configured with cfg; any
// other bug name returns c unchanged. The wrapper keeps c's Watch, so the
// Elector's campaign still wakes on releases.
func Wrap(c tenure.Coordinator, bug string, cfg tenure.Config) tenure.Coordinator {
	switch bug {
	case ReplyDeadline:
		return replyDeadline{passthrough{c}}
	case NoMargin:
		return noMargin{passthrough{c}, cfg}
	case RenewAfterExpiry:
		return renewAfterExpiry{passthrough{c}, cfg}
	default:
		return c
	}
}

// passthrough forwards Watch to the inner coordinator.
type passthrough struct{ tenure.Coordinator }

// Watch forwards to the inner coordinator when it can watch.
func (c passthrough) Watch(ctx context.Context, key string) (<-chan tenure.LeaderEvent, error) {
	if w, ok := c.Coordinator.(tenure.Watcher); ok {
		return w.Watch(ctx, key)
	}
	return nil, errors.New("plant: coordinator cannot watch")
}

type replyDeadline struct{ passthrough }

func (c replyDeadline) Acquire(ctx context.Context, key, holder string, ttl time.Duration) (tenure.Grant, error) {
	sent := time.Now()
	g, err := c.Coordinator.Acquire(ctx, key, holder, ttl)
	g.TTL += time.Since(sent)
	return g, err
}

func (c replyDeadline) Renew(ctx context.Context, g tenure.Grant) (tenure.Grant, error) {
	sent := time.Now()
	g, err := c.Coordinator.Renew(ctx, g)
	g.TTL += time.Since(sent)
	return g, err
}

type noMargin struct {
	passthrough
	cfg tenure.Config
}

func (c noMargin) inflate(g tenure.Grant) tenure.Grant {
	g.TTL = time.Duration(float64(g.TTL+c.cfg.Margin) / (1 - c.cfg.MaxDrift))
	return g
}

func (c noMargin) Acquire(ctx context.Context, key, holder string, ttl time.Duration) (tenure.Grant, error) {
	g, err := c.Coordinator.Acquire(ctx, key, holder, ttl)
	return c.inflate(g), err
}

func (c noMargin) Renew(ctx context.Context, g tenure.Grant) (tenure.Grant, error) {
	g.TTL = c.cfg.TTL
	g, err := c.Coordinator.Renew(ctx, g)
	return c.inflate(g), err
}

type renewAfterExpiry struct {
	passthrough
	cfg tenure.Config
}

func (c renewAfterExpiry) Renew(ctx context.Context, g tenure.Grant) (tenure.Grant, error) {
	rctx, cancel := context.WithTimeout(ctx, 2*c.cfg.EffectiveRetryPeriod())
	defer cancel()
	r, err := c.Coordinator.Renew(rctx, g)
	if err == nil {
		return r, nil
	}
	if errors.Is(err, tenure.ErrLost) {
		// Quietly take the key again if it is free; whatever happens, the
		// old term carries on.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.EffectiveRetryPeriod())
		_, _ = c.Coordinator.Acquire(actx, g.Key, g.Holder, c.cfg.TTL)
		cancel()
	}
	if g.TTL <= 0 {
		g.TTL = c.cfg.TTL
	}
	return g, nil
}
