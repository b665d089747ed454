package tenure

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenure-dev/tenure/internal/identity"
	"github.com/tenure-dev/tenure/internal/timing"

	"github.com/tenure-dev/tenure/internal/display"

	"github.com/tenure-dev/tenure/internal/campaign"
	"github.com/tenure-dev/tenure/internal/timerwait"
)

// An Elector campaigns for one key on behalf of one holder and runs user code
// only while it leads. Create it with NewElector and call Run.
type Elector struct {
	c       Coordinator
	cfg     Config
	log     *slog.Logger
	metrics Metrics
	id      string // the holder identity sent to the coordinator: Identity(cfg.Holder, cfg.Instance)

	running atomic.Bool

	mu   sync.Mutex
	term *Term // current term, nil when not leading
}

// NewElector returns an Elector for cfg.Key on c. It validates cfg and
// reports every bad field.
func NewElector(c Coordinator, cfg Config) (*Elector, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: coordinator is nil", ErrInvalidConfig)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Instance == "" {
		cfg.Instance = identity.NewInstance() // this Elector's own: see Config.Instance
	}
	e := &Elector{c: c, cfg: cfg, log: cfg.Logger, metrics: cfg.Metrics}
	if e.log == nil {
		e.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if e.metrics == nil {
		e.metrics = nopMetrics{}
	}
	e.id = Identity(cfg.Holder, cfg.Instance)
	e.log = e.log.With("key", cfg.Key, "holder", e.id)
	return e, nil
}

// Identity is the holder identity this Elector's grants carry:
// Identity(Config.Holder, Config.Instance), with the Instance the Elector
// drew when none was given.
func (e *Elector) Identity() string { return e.id }

// Term returns the current term, or nil when this node does not lead.
func (e *Elector) Term() *Term {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.term == nil || e.term.Check() != nil {
		return nil
	}
	return e.term
}

// IsLeader reports whether this node leads now: it holds a term whose local
// deadline has not passed.
func (e *Elector) IsLeader() bool {
	return e.Term() != nil
}

// Run campaigns for the key and calls fn with a Term each time this node
// becomes leader, until ctx ends or fn returns while still leading.
//
//   - fn must return when its ctx argument is cancelled: at the local
//     deadline, when the grant is lost, when a resource rejects the token, or
//     on shutdown. Work already under way may use t.Context(), which on
//     shutdown stays live until fn returns or the local deadline passes.
//   - If the term ends while fn runs, Run waits for fn to return, releases
//     what may be left of the grant, and campaigns again.
//   - If fn returns an error matching ErrStaleToken, the node steps down at
//     once ("fenced by resource") and campaigns again.
//   - If fn returns otherwise while the term is live, Run resigns: it
//     releases the key, so that a follower takes over at once, and returns
//     fn's error.
//   - While the key is held by another node, Run waits on the coordinator's
//     watch, and polls every retry period while the watch is down.
//   - When ctx ends, Run resigns: it cancels fn's ctx argument (stop taking
//     new work) but leaves the term's own context, t.Context(), live so that
//     in-flight work can finish; it stops renewing and waits for fn to
//     return, at most until the local deadline; then it ends the term,
//     waits for fn if it is still running, releases the key (never before
//     fn has returned: what is left of the lease keeps a successor out
//     while fn may still write), and returns ctx.Err().
//   - After a term that a resource fenced, Run backs off (jittered, from
//     the retry period doubling up to the TTL) before campaigning again.
//
// Run returns an error at once for a configuration the coordinator refuses
// (an invalid key, holder or TTL), and when the coordinator refuses a
// campaign or a renewal for good (an error matching ErrRefused: a role
// that may not write, credentials it does not accept): a refused renewal
// first ends the term (fn's ctx is cancelled, as for a lost grant) and
// waits for fn to return. Other failures of the coordinator (timeouts,
// an unreachable or unavailable server, conflicts) are retried without
// end: while campaigning with backoff, while leading every retry period
// until the local deadline. Without Config.Logger they go unreported; a
// refusal is reported by the error Run returns. Only one Run may be active per Elector,
// and per key, identity and Coordinator in a process: while one runs,
// another Elector's Run for the same key on the same Coordinator with the
// same identity (Holder and Instance) returns an error wrapping
// ErrInvalidConfig that names them (see Config.Instance).
func (e *Elector) Run(ctx context.Context, fn func(ctx context.Context, t *Term) error) error {
	if fn == nil {
		return fmt.Errorf("%w: Run needs a function", ErrInvalidConfig)
	}
	if !e.running.CompareAndSwap(false, true) {
		return errors.New("tenure: Elector.Run is already running")
	}
	defer e.running.Store(false)
	leave, ok := campaign.Enter(e.c, campaign.Key, e.cfg.Key, e.id)
	if !ok {
		return fmt.Errorf("%w: Elector.Run: another Elector of this process already campaigns for key %q on this coordinator as %s: "+
			"two Electors of one identity are one contender, and each one's Acquire would take the key from the other; "+
			"give each its own Config.Instance (leave it empty to draw one)", ErrInvalidConfig, e.cfg.Key, display.Holder(e.id))
	}
	defer leave()

	fenced := 0 // terms in a row that a resource fenced
	for {
		if fenced > 0 {
			// A resource has seen a newer token than this node was just
			// granted: someone else leads, or the resource was written by
			// another coordinator. Back off before campaigning again, so
			// that a node never spins acquire → rejected → release.
			if err := sleepCtx(ctx, jitter(e.fencedBackoff(fenced))); err != nil {
				return err
			}
		}
		t, err := e.campaign(ctx)
		if err != nil {
			return err
		}
		done, err := e.lead(ctx, t, fn)
		if done {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if cause := t.cause(); errors.Is(cause, ErrRefused) {
			return fmt.Errorf("term %d on %q: %w", t.token, e.cfg.Key, cause)
		}
		if errors.Is(t.cause(), ErrStaleToken) {
			fenced++
		} else {
			fenced = 0
		}
	}
}

// The rest of this file is what the campaign (in term.go) and Run lean on:
// the backoff after a fenced term (fencedBackoff, sleepCtx, jitter), the
// timing a term's lease is kept by (timing), the key's watch (openWatch,
// watch), and the errors that end a campaign (permanent).

// fencedBackoff is how long to wait before campaigning after n fenced terms
// in a row: the retry period, doubling with each, at most the TTL.
func (e *Elector) fencedBackoff(n int) time.Duration {
	d := timing.RetryPeriod(e.cfg.TTL, e.cfg.RetryPeriod)
	for i := 1; i < n && d < e.cfg.TTL; i++ {
		d *= 2
	}
	return min(d, e.cfg.TTL)
}

// timing is how this Elector keeps a lease granted for ttl.
func (e *Elector) timing() leaseTiming {
	return newLeaseTiming(e.cfg.TTL, e.cfg.RenewInterval, e.cfg.RetryPeriod, e.cfg.RequestTimeout, e.cfg.MaxDrift, e.cfg.Margin)
}

// sleepCtx waits for d or until ctx ends, and returns ctx's error if it
// ended.
func sleepCtx(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(timerwait.Delay(d))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// openWatch opens the coordinator's watch of the key, or returns nil (the
// campaign polls) and says why: at warning level when the watch was
// refused, a permission someone can grant, else at debug level.
func (e *Elector) openWatch(ctx context.Context) <-chan LeaderEvent {
	ch, err := e.watch(ctx, e.c)
	if err == nil {
		return ch
	}
	level := slog.LevelDebug
	if errors.Is(err, ErrRefused) {
		level = slog.LevelWarn
	}
	e.log.Log(ctx, level, "watch failed; polling the key every retry period instead", "err", err)
	return nil
}

// permanent reports whether err is one that retrying an Acquire cannot
// cure: an input the coordinator refuses, a closed coordinator, a refusal.
func permanent(err error) bool {
	return errors.Is(err, ErrInvalidKey) || errors.Is(err, ErrInvalidHolder) ||
		errors.Is(err, ErrInvalidTTL) || errors.Is(err, ErrClosed) || errors.Is(err, ErrRefused)
}

// watch opens a watch of the key that lives as long as ctx, but whose setup
// is bounded by the request timeout: a hung coordinator must not freeze the
// campaign (it falls back to polling).
func (e *Elector) watch(ctx context.Context, w Coordinator) (<-chan LeaderEvent, error) {
	wctx, cancel := context.WithCancelCause(ctx)
	timeout := timing.RequestTimeout(e.cfg.TTL, e.cfg.RenewInterval, e.cfg.RequestTimeout)
	timer := time.AfterFunc(timeout, func() {
		cancel(fmt.Errorf("tenure: watch of %q not set up within %s", e.cfg.Key, timeout))
	})
	ch, err := w.Watch(wctx, e.cfg.Key)
	if !timer.Stop() {
		// The setup outlived its bound; a watch that came up anyway has
		// been cancelled with it.
		if err == nil {
			err = context.Cause(wctx)
		}
		return nil, err
	}
	if err != nil {
		cancel(nil)
		return nil, err
	}
	// wctx now lives until ctx ends (cancel is dropped on purpose: ctx's
	// cancellation releases it).
	return ch, nil
}

// jitter returns d scaled by a random factor in [0.5, 1.5).
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.5 + rand.Float64()))
}
