package tenure

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
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

// timing is how this Elector keeps a lease granted for ttl.
func (e *Elector) timing() leaseTiming {
	return newLeaseTiming(e.cfg.TTL, e.cfg.RenewInterval, e.cfg.RetryPeriod, e.cfg.RequestTimeout, e.cfg.MaxDrift, e.cfg.Margin)
}

// begin turns grant g into a term on a lease of its own, or returns nil
// (after releasing the grant) when its local deadline has already passed.
// A grant that does not say when its lease was started is a coordinator's
// bug: Run returns it.
func (e *Elector) begin(ctx context.Context, g Grant) (*Term, error) {
	l, err := newLease(e.timing(), g.TTL, g.Sent, true, e.log, "renewal", "token", g.Token)
	if err != nil {
		e.release(ctx, g, slog.LevelWarn)
		return nil, fmt.Errorf("campaign for %q: coordinator %T returned a grant with %w", e.cfg.Key, e.c, err)
	}
	t := l.Start(ctx, g)
	if t.Check() != nil {
		e.log.Warn("grant arrived after its local deadline; not acting on it", "token", g.Token, "ttl", g.TTL)
		e.release(ctx, g, slog.LevelWarn)
		return nil, nil
	}
	e.mu.Lock()
	e.term = t
	e.mu.Unlock()
	e.log.Info("leadership acquired", "token", g.Token, "ttl", g.TTL, "remaining", t.Remaining())
	e.metrics.SetLeader(g.Key, true)
	e.metrics.SetToken(g.Key, g.Token)
	e.metrics.TermBegan(t)
	e.transition(Elected, t, nil)
	return t, nil
}

// lead runs fn for term t, renews the lease in the background and ends the
// term. done reports whether Run should return (with err).
//
// fn gets a work context that is cancelled when the term ends and also when
// the elector resigns; the term's own context (t.Context()) stays live while
// in-flight work drains during a resignation, until fn returns or the local
// deadline passes.
func (e *Elector) lead(ctx context.Context, t *Term, fn func(context.Context, *Term) error) (done bool, err error) {
	stopRenewing := e.renew(t)
	workCtx, stopWork := context.WithCancelCause(t.Context())
	defer stopWork(nil)
	fnDone := make(chan error, 1)
	go func() { fnDone <- fn(workCtx, t) }()

	defer func() {
		stopRenewing()
		e.mu.Lock()
		if e.term == t {
			e.term = nil
		}
		e.mu.Unlock()
		e.metrics.SetLeader(t.key, false)
	}()

	select {
	case fnErr := <-fnDone:
		switch {
		case IsStale(fnErr):
			// A resource saw a newer token: someone else leads. Step down now.
			t.end(fmt.Errorf("%w: fenced by resource: %w", ErrNotLeader, fnErr))
			e.ended(ctx, t)
			return false, nil
		case t.isEnded() || t.Check() != nil:
			// fn returned because the term ended.
			e.ended(ctx, t)
			return false, nil
		default:
			stopRenewing()
			e.resign(ctx, t, nil)
			return true, fnErr
		}

	case <-t.Context().Done():
		kind := e.reportEnd(t)
		// fn must return now that its context is cancelled. Release only
		// after it has: until then the lease, if any is left, keeps a
		// successor from starting while fn's in-flight work finishes.
		fnErr := <-fnDone
		if fnErr != nil && !errors.Is(fnErr, context.Canceled) && !IsStale(fnErr) && !errors.Is(fnErr, ErrNotLeader) {
			e.log.Warn("leader function returned an error after the term ended", "err", fnErr)
		}
		e.releaseEnded(ctx, t, kind)
		return false, nil

	case <-ctx.Done():
		// Stop new work and stop renewing: the drain is bounded by the
		// local deadline as it stands.
		stopWork(fmt.Errorf("%w: resigning", ErrNotLeader))
		stopRenewing()
		e.resign(ctx, t, fnDone)
		return true, ctx.Err()
	}
}

// ended reports the end of term t (whose context is already cancelled) and
// releases what may be left of its grant. fn must have returned.
func (e *Elector) ended(ctx context.Context, t *Term) {
	e.releaseEnded(ctx, t, e.reportEnd(t))
}

// releaseEnded releases what may be left of the grant of term t, which
// ended for reason kind.
func (e *Elector) releaseEnded(ctx context.Context, t *Term, kind TransitionKind) {
	if kind != Lost {
		// The grant may still be live at the coordinator (renewal replies
		// lost, or a resource saw a newer token first): release it so that
		// the next leader need not wait for it to expire.
		e.release(ctx, t.Grant(), slog.LevelInfo)
	}
}

// reportEnd logs the end of term t and reports it to metrics and the
// OnTransition hook, and returns its kind.
func (e *Elector) reportEnd(t *Term) TransitionKind {
	cause := t.cause()
	kind := Expired
	switch {
	case errors.Is(cause, ErrStaleToken):
		kind = Fenced
		e.log.Warn("fenced by resource: stepping down", "token", t.token, "err", cause)
	case errors.Is(cause, ErrLost):
		kind = Lost
		e.log.Warn("leadership lost", "token", t.token, "err", cause)
	case errors.Is(cause, ErrRefused):
		kind = Lost
		e.log.Error("leadership lost: the coordinator refused the renewal; stopping", "token", t.token, "err", cause)
	case errors.Is(cause, errSteppedDown):
		kind = SteppedDown
		e.log.Info("stepped down", "token", t.token, "err", cause)
	default:
		e.log.Warn("leadership expired at the local deadline", "token", t.token, "err", cause)
	}
	e.metrics.SetLeader(t.key, false)
	e.transition(kind, t, cause)
	return kind
}

// resign ends term t on purpose. When fnDone is non-nil, new work has been
// stopped and fn is draining: resign waits for it at most until the local
// deadline, then ends the term, releases the key and waits for fn to finish.
func (e *Elector) resign(ctx context.Context, t *Term, fnDone <-chan error) {
	e.log.Info("resigning", "token", t.token)
	if fnDone != nil {
		timer := time.NewTimer(timerwait.Delay(time.Until(t.Deadline())))
		select {
		case <-fnDone:
			timer.Stop()
			fnDone = nil
		case <-timer.C:
			e.log.Warn("leader function still running at the local deadline; its term ends now, and the key is released when it returns", "token", t.token)
		case <-t.Context().Done():
			// The term ended (deadline, lost) while draining.
		}
	}
	t.end(fmt.Errorf("%w: resigned", ErrNotLeader))
	if fnDone != nil {
		// Release only after fn has returned: until then what is left of
		// the lease keeps a successor from starting while fn may still be
		// writing (the same rule as when a term ends).
		<-fnDone
		fnDone = nil
	}
	e.release(ctx, t.Grant(), slog.LevelWarn)
	e.metrics.SetLeader(t.key, false)
	e.transition(Resigned, t, nil)
}

// release releases g, bounded by the request timeout, even when ctx has
// ended. A failure is logged at level: Info for the grant of a term that
// ended (its lease was likely lost already, and expires on its own).
func (e *Elector) release(ctx context.Context, g Grant, level slog.Level) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timing.RequestTimeout(e.cfg.TTL, e.cfg.RenewInterval, e.cfg.RequestTimeout))
	defer cancel()
	if err := e.c.Release(rctx, g); err != nil {
		e.log.Log(ctx, level, "release failed; the lease expires on its own", "token", g.Token, "err", err)
		return
	}
	e.log.Debug("released", "token", g.Token)
}

// renew renews t's lease in the background until the term is over (see
// Lease.Keep), or until stop is called, which waits for it. Stopping also
// abandons a renewal in flight, so that a resignation never waits for a
// hung renewal until the local deadline.
func (e *Elector) renew(t *Term) (stop func()) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = t.lease.Keep(ctx, func(ctx context.Context, _ time.Time) (Grant, time.Time, error) {
			start := time.Now()
			g, err := e.c.Renew(ctx, t.Grant())
			e.metrics.ObserveRenew(t.key, time.Since(start), err)
			return g, time.Time{}, err
		})
	}()
	return func() { cancel(); <-done }
}

// transition reports a transition to metrics and the OnTransition hook.
func (e *Elector) transition(kind TransitionKind, t *Term, err error) {
	e.metrics.Transition(t.key, kind)
	if e.cfg.OnTransition != nil {
		e.cfg.OnTransition(Transition{Kind: kind, Key: t.key, Holder: t.holder, Token: t.token, At: time.Now(), Err: err})
	}
}
