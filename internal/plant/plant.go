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
	"sync"
	"time"

	"github.com/tenure-dev/tenure/internal/timing"

	"github.com/tenure-dev/tenure"
)

// The planted bugs.
const (
	// None: the node as shipped.
	None = ""
	// NoToken: the writer presents no fencing token and writes through an
	// unfenced path, so nothing stops a stale write. It is planted in the
	// writer, not the coordinator: Wrap leaves the coordinator unchanged.
	NoToken = "no-token"
	// ReplyDeadline: the local deadline is measured from the reply instead
	// of the send: a grant's Sent is read when the reply arrives.
	ReplyDeadline = "reply-deadline"
	// NoMargin: no safety margin and no drift allowance: the reported TTL
	// is inflated so that TTL'·(1−MaxDrift) − Margin equals the real TTL.
	NoMargin = "no-margin"
	// RenewAfterExpiry: a renewal that fails or reports the grant lost is
	// reported renewed (re-acquiring quietly when the key is free), so the
	// old term carries on.
	RenewAfterExpiry = "renew-after-expiry"
	// SlowClock: while a clock fault of tenure verify is in force, the
	// node's own clock runs slower than MaxDrift allows, by more than the
	// margin absorbs, so that its local deadline falls after its lease. It
	// is planted in the node's clock by package chaos, whose clock faults
	// set it: Wrap leaves the coordinator unchanged.
	SlowClock = "slow-clock"
	// WallClock: the node reads each lease's send on its wall clock and
	// converts it to its monotonic clock with the offset between the two it
	// measured when its term began, so that a wall clock that jumps forward
	// moves every later local deadline forward by the jump. It is planted
	// in the node's clock by package chaos, whose clock faults move the wall
	// clock: Wrap leaves the coordinator unchanged.
	WallClock = "wall-clock"
)

// All lists every planted bug.
func All() []string {
	return []string{NoToken, ReplyDeadline, NoMargin, RenewAfterExpiry, SlowClock, WallClock}
}

// Wrap returns c with bug planted for an Elector configured with cfg; any
// other bug name (None, NoToken, the clock plants) returns c unchanged.
// The wrapper keeps c's Watch, so the Elector's campaign still wakes on
// releases.
func Wrap(c tenure.Coordinator, bug string, cfg tenure.Config) tenure.Coordinator {
	switch bug {
	case ReplyDeadline:
		return replyDeadline{Passthrough{c}}
	case NoMargin:
		return noMargin{Passthrough{c}, cfg, newBent()}
	case RenewAfterExpiry:
		return renewAfterExpiry{Passthrough{c}, cfg}
	default:
		return c
	}
}

// Passthrough is a base for coordinator wrappers: it forwards every call,
// Watch included, to the Coordinator it embeds, so that an Elector above a
// wrapper still campaigns on watch events rather than by polling.
type Passthrough struct{ tenure.Coordinator }

// bent remembers the TTL the coordinator really granted for each token
// whose TTL a plant has inflated, so that grants handed back to the
// coordinator (Renew, Release) carry the real one: the bug bends only the
// Elector's deadline, not what the coordinator is asked (etcd finds a
// holder's shared lease by its TTL; PostgreSQL extends by it).
type bent struct {
	mu   sync.Mutex
	real map[uint64]time.Duration
}

func newBent() *bent { return &bent{real: make(map[uint64]time.Duration)} }

// bend records g's real TTL and returns g with ttl instead.
func (b *bent) bend(g tenure.Grant, ttl time.Duration) tenure.Grant {
	if g.Token == 0 { // no grant (an error)
		return g
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.real[g.Token] = g.TTL
	g.TTL = ttl
	return g
}

// unbend returns g with the TTL the coordinator really granted it.
func (b *bent) unbend(g tenure.Grant) tenure.Grant {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ttl, ok := b.real[g.Token]; ok {
		g.TTL = ttl
	}
	return g
}

type replyDeadline struct{ Passthrough }

func (c replyDeadline) Acquire(ctx context.Context, key, holder string, ttl time.Duration) (tenure.Grant, error) {
	g, err := c.Coordinator.Acquire(ctx, key, holder, ttl)
	if err == nil {
		g.Sent = tenure.Now()
	}
	return g, err
}

func (c replyDeadline) Renew(ctx context.Context, g tenure.Grant) (tenure.Grant, error) {
	g, err := c.Coordinator.Renew(ctx, g)
	if err == nil {
		g.Sent = tenure.Now()
	}
	return g, err
}

type noMargin struct {
	Passthrough
	cfg tenure.Config
	b   *bent
}

func (c noMargin) inflate(g tenure.Grant) tenure.Grant {
	return c.b.bend(g, time.Duration(float64(g.TTL+c.cfg.Margin)/(1-c.cfg.MaxDrift)))
}

func (c noMargin) Acquire(ctx context.Context, key, holder string, ttl time.Duration) (tenure.Grant, error) {
	g, err := c.Coordinator.Acquire(ctx, key, holder, ttl)
	return c.inflate(g), err
}

func (c noMargin) Renew(ctx context.Context, g tenure.Grant) (tenure.Grant, error) {
	g, err := c.Coordinator.Renew(ctx, c.b.unbend(g))
	return c.inflate(g), err
}

func (c noMargin) Release(ctx context.Context, g tenure.Grant) error {
	return c.Coordinator.Release(ctx, c.b.unbend(g))
}

type renewAfterExpiry struct {
	Passthrough
	cfg tenure.Config
}

func (c renewAfterExpiry) Renew(ctx context.Context, g tenure.Grant) (tenure.Grant, error) {
	rctx, cancel := context.WithTimeout(ctx, 2*timing.RetryPeriod(c.cfg.TTL, c.cfg.RetryPeriod))
	defer cancel()
	r, err := c.Coordinator.Renew(rctx, g)
	if err == nil {
		return r, nil
	}
	if errors.Is(err, tenure.ErrLost) {
		// Quietly take the key again if it is free; whatever happens, the
		// old term carries on.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timing.RetryPeriod(c.cfg.TTL, c.cfg.RetryPeriod))
		_, _ = c.Coordinator.Acquire(actx, g.Key, g.Holder, c.cfg.TTL)
		cancel()
	}
	if g.TTL <= 0 {
		g.TTL = c.cfg.TTL
	}
	g.Sent = tenure.Now() // as if renewed just now
	return g, nil
}
