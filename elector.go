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
)

// An Elector campaigns for one key on behalf of one holder and runs user code
// only while it leads. Create it with NewElector and call Run.
type Elector struct {
	c       Coordinator
	cfg     Config
	log     *slog.Logger
	metrics Metrics
	id      string // the holder identity sent to the coordinator: cfg.Identity()

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
	e := &Elector{c: c, cfg: cfg, log: cfg.Logger, metrics: cfg.Metrics}
	if e.log == nil {
		e.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if e.metrics == nil {
		e.metrics = NopMetrics{}
	}
	e.id = cfg.Identity()
	e.log = e.log.With("key", cfg.Key, "holder", e.id)
	return e, nil
}

// Config returns the elector's configuration.
func (e *Elector) Config() Config { return e.cfg }

// Identity is the holder identity this Elector's grants carry:
// "Holder#Instance" (see Config.Identity).
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
	t := e.Term()
	return t != nil && t.Check() == nil
}

// Leader asks the coordinator who leads the key now.
func (e *Elector) Leader(ctx context.Context) (Grant, bool, error) {
	return e.c.Leader(ctx, e.cfg.Key)
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
//     releases the key, so that a follower takes over in one round trip, and
//     returns fn's error.
//   - When ctx ends, Run resigns: it cancels fn's ctx argument (stop taking
//     new work) but leaves the term's own context, t.Context(), live so that
//     in-flight work can finish; it stops renewing and waits for fn to
//     return, at most until the local deadline; then it ends the term,
//     releases the key, waits for fn if it is still running, and returns
//     ctx.Err().
//
// Run returns an error at once for a configuration the coordinator refuses
// (an invalid key, holder or TTL). Only one Run may be active per Elector.
func (e *Elector) Run(ctx context.Context, fn func(ctx context.Context, t *Term) error) error {
	if fn == nil {
		return fmt.Errorf("%w: Run needs a function", ErrInvalidConfig)
	}
	if !e.running.CompareAndSwap(false, true) {
		return errors.New("tenure: Elector.Run is already running")
	}
	defer e.running.Store(false)

	for {
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
	}
}

// campaign acquires the key, waiting for it to be free when it is held. It
// returns a live term, or ctx's error, or a permanent error.
func (e *Elector) campaign(ctx context.Context) (*Term, error) {
	retry := e.cfg.EffectiveRetryPeriod()
	backoff := retry

	// A watch, when the coordinator offers one, wakes the campaign the
	// moment the key is released or expires. It is opened lazily, the first
	// time the key is found held, and closed when the campaign ends.
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	var events <-chan LeaderEvent
	watcher, canWatch := e.c.(Watcher)

	for {
		sent := time.Now()
		actx, cancel := context.WithTimeout(ctx, e.cfg.EffectiveRequestTimeout())
		g, err := e.c.Acquire(actx, e.cfg.Key, e.id, e.cfg.TTL)
		cancel()
		if err == nil {
			if t := e.begin(ctx, g, sent); t != nil {
				return t, nil
			}
			// The reply came too late to act on; try again.
		} else {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if errors.Is(err, ErrInvalidKey) || errors.Is(err, ErrInvalidHolder) ||
				errors.Is(err, ErrInvalidTTL) || errors.Is(err, ErrClosed) {
				return nil, fmt.Errorf("campaign for %q: %w", e.cfg.Key, err)
			}
			var held *HeldError
			if errors.As(err, &held) {
				e.log.Debug("key held", "leader", held.Holder, "token", held.Token)
				if canWatch && events == nil {
					if ch, werr := watcher.Watch(watchCtx, e.cfg.Key); werr == nil {
						events = ch
					} else {
						e.log.Debug("watch failed; polling", "err", werr)
						canWatch = false
					}
				}
			} else {
				e.log.Warn("acquire failed", "err", err)
			}
		}

		wait := jitter(backoff)
		backoff = min(2*backoff, 4*retry)
		timer := time.NewTimer(wait)
	waiting:
		for {
			select {
			case <-ctx.Done():
				timer.Stop()
				return nil, ctx.Err()
			case <-timer.C:
				break waiting
			case ev, ok := <-events:
				if !ok {
					events = nil
					canWatch = false // the watch failed: poll from now on
					continue
				}
				if !ev.Held {
					timer.Stop()
					backoff = retry
					break waiting
				}
			}
		}
	}
}

// begin turns a grant whose request was sent at sent into a term, or returns
// nil (after releasing the grant) when its local deadline has already passed.
func (e *Elector) begin(ctx context.Context, g Grant, sent time.Time) *Term {
	deadline := sent.Add(e.cfg.SafeLease(g.TTL))
	if !time.Now().Before(deadline) {
		e.log.Warn("grant arrived after its local deadline; not acting on it", "token", g.Token, "ttl", g.TTL)
		e.release(ctx, g)
		return nil
	}
	t := newTerm(context.WithoutCancel(ctx), g, deadline)
	e.mu.Lock()
	e.term = t
	e.mu.Unlock()
	e.log.Info("leadership acquired", "token", g.Token, "ttl", g.TTL, "remaining", time.Until(deadline))
	e.metrics.SetLeader(g.Key, true)
	e.metrics.SetToken(g.Key, g.Token)
	e.metrics.TermBegan(t)
	e.transition(Elected, t, nil)
	return t
}

// lead runs fn for term t, renews the lease in the background and ends the
// term. done reports whether Run should return (with err).
//
// fn gets a work context that is cancelled when the term ends and also when
// the elector resigns; the term's own context (t.Context()) stays live while
// in-flight work drains during a resignation, until fn returns or the local
// deadline passes.
func (e *Elector) lead(ctx context.Context, t *Term, fn func(context.Context, *Term) error) (done bool, err error) {
	// Stopping the renewals also abandons one in flight, so that a
	// resignation never waits for a hung renewal until the local deadline.
	renewCtx, stopRenew := context.WithCancel(t.Context())
	defer stopRenew()
	renewDone := make(chan struct{})
	go func() {
		defer close(renewDone)
		e.renewLoop(renewCtx, t)
	}()
	stopRenewing := func() {
		stopRenew()
		<-renewDone
	}
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

	case <-t.Done():
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
		e.release(ctx, t.Grant())
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
		timer := time.NewTimer(time.Until(t.Deadline()))
		select {
		case <-fnDone:
			timer.Stop()
			fnDone = nil
		case <-timer.C:
			e.log.Warn("leader function still running at the local deadline; releasing anyway", "token", t.token)
		case <-t.Done():
			// The term ended (deadline, lost) while draining.
		}
	}
	t.end(fmt.Errorf("%w: resigned", ErrNotLeader))
	e.release(ctx, t.Grant())
	e.metrics.SetLeader(t.key, false)
	e.transition(Resigned, t, nil)
	if fnDone != nil {
		<-fnDone
	}
}

// release releases g, bounded by the request timeout, even when ctx has ended.
func (e *Elector) release(ctx context.Context, g Grant) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.EffectiveRequestTimeout())
	defer cancel()
	if err := e.c.Release(rctx, g); err != nil {
		e.log.Warn("release failed; the lease will expire on its own", "token", g.Token, "err", err)
		return
	}
	e.log.Debug("released", "token", g.Token)
}

// renewLoop renews t every renew interval until ctx ends (t's context, or
// the elector stopping renewals). A failed renewal is retried every retry
// period until the local deadline; a renewal that reports the grant lost
// ends the term at once.
func (e *Elector) renewLoop(ctx context.Context, t *Term) {
	// A coordinator may grant less than was asked (rounding): renew often
	// enough for the TTL actually granted.
	interval := func() time.Duration {
		return max(min(e.cfg.EffectiveRenewInterval(), e.cfg.SafeLease(t.Grant().TTL)/3), time.Millisecond)
	}
	retry := e.cfg.EffectiveRetryPeriod()
	timer := time.NewTimer(interval())
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		ok := e.renewOnce(ctx, t)
		if ctx.Err() != nil { // stopped while the renewal was in flight
			return
		}
		if t.Check() != nil { // ended, or the deadline passed
			return
		}
		if ok {
			timer.Reset(interval())
		} else {
			timer.Reset(min(retry, max(time.Until(t.Deadline()), 0)))
		}
	}
}

// renewOnce tries one renewal of t, bounded by t's deadline, and reports
// whether it succeeded. It ends t when the grant is lost.
func (e *Elector) renewOnce(ctx context.Context, t *Term) bool {
	// The renewal is bounded by the local deadline: after it, a reply is of
	// no use. ctx derives from the term's context, so the call is abandoned
	// when the term ends or renewals stop.
	rctx, cancel := context.WithDeadline(ctx, t.Deadline())
	defer cancel()
	sent := time.Now()
	g, err := e.c.Renew(rctx, t.Grant())
	took := time.Since(sent)
	e.metrics.ObserveRenew(t.key, took, err)
	switch {
	case err == nil:
		if !t.extend(g.TTL, sent.Add(e.cfg.SafeLease(g.TTL))) {
			// The deadline passed while the reply was on its way: the term
			// is over, whatever the coordinator says now.
			t.end(fmt.Errorf("%w: term %d on %q: renewal arrived after the local deadline", ErrNotLeader, t.token, t.key))
			return false
		}
		e.log.Debug("renewed", "token", t.token, "took", took, "remaining", t.Remaining())
		return true
	case errors.Is(err, ErrLost):
		t.end(fmt.Errorf("%w: %w", ErrNotLeader, err))
		return false
	default:
		if !t.isEnded() && ctx.Err() == nil {
			e.log.Warn("renewal failed; retrying until the local deadline", "token", t.token, "took", took, "remaining", t.Remaining(), "err", err)
		}
		return false
	}
}

// transition reports a transition to metrics and the OnTransition hook.
func (e *Elector) transition(kind TransitionKind, t *Term, err error) {
	e.metrics.Transition(t.key, kind)
	if e.cfg.OnTransition != nil {
		e.cfg.OnTransition(Transition{Kind: kind, Key: t.key, Holder: t.holder, Token: t.token, At: time.Now(), Err: err})
	}
}

// jitter returns d scaled by a random factor in [0.5, 1.5).
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.5 + rand.Float64()))
}
