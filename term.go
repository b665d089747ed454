package tenure

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/tenure-dev/tenure/internal/boottime"
	"github.com/tenure-dev/tenure/internal/outage"
	"github.com/tenure-dev/tenure/internal/timerwait"
	"github.com/tenure-dev/tenure/internal/timing"
)

// errSteppedDown marks a term ended by Term.StepDown.
var errSteppedDown = errors.New("stepped down")

// A Term is what user code receives while it leads: the grant, its local
// deadline, a context cancelled when the term ends, and Check. A Term is
// safe for concurrent use.
//
// The local deadline is kept on two clocks: Go's monotonic clock (Deadline)
// and the boot clock, which keeps counting while the host is suspended
// (CLOCK_BOOTTIME on Linux). The term is over when either
// says so (a suspend shorter than 50 ms is taken for scheduling noise), so a
// leader resumed after a suspend longer than its lease never acts again on
// that term.
//
// A term ends, for good, when its local deadline passes without a renewal,
// when the coordinator reports the grant lost, when a resource rejects its
// token (StepDown with a stale error), or when the Elector resigns. Its
// context is cancelled first, then the end is reported.
type Term struct {
	key, holder string
	token       uint64

	ctx    context.Context
	cancel context.CancelCauseFunc

	mu           sync.Mutex
	ttl          time.Duration
	sent         Instant   // Grant.Sent as last renewed
	deadline     time.Time // carries a monotonic reading
	bootDeadline boottime.Instant
	lease        *Lease // the lease the term rides, whose timer ends it
	ended        bool
	renewed      chan struct{} // closed by the next extend; nil until Renewed asks
}

// overLocked reports how far past its local deadline the term is:
// negative while it is not (see Instant.past).
func (t *Term) overLocked() time.Duration {
	return Instant{mono: t.deadline, boot: t.bootDeadline}.past()
}

// Token is the fencing token of this term. Present it to every protected
// resource.
func (t *Term) Token() uint64 { return t.token }

// Grant returns the grant as last renewed.
func (t *Term) Grant() Grant {
	t.mu.Lock()
	defer t.mu.Unlock()
	return Grant{Key: t.key, Holder: t.holder, Token: t.token, TTL: t.ttl, Sent: t.sent}
}

// Deadline is the local deadline: when this node must stop acting unless a
// renewal moves it. It carries a monotonic clock reading; compare it only with
// time.Now() of this process. Go's monotonic clock stops while the host is
// suspended: Check and Remaining also consult the boot clock, which does
// not.
func (t *Term) Deadline() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.deadline
}

// BootDeadline is the local deadline on the boot clock, as Instant.Boot
// reads it: the same instant as Deadline, measured from the same send time,
// but one that can be handed to another process on the same Linux host (a
// watchdog that stops the work when the deadline passes, even if this
// process is stuck). Read it again after each renewal (see Renewed).
func (t *Term) BootDeadline() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return int64(t.bootDeadline)
}

// Remaining is how long until the local deadline, by the rule Check uses;
// zero or negative once the term has ended.
func (t *Term) Remaining() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return 0
	}
	return -t.overLocked()
}

// Context returns a context cancelled when the term ends. context.Cause
// reports why (an error matching ErrNotLeader, and ErrLost or ErrStaleToken
// when those were the reason).
func (t *Term) Context() context.Context { return t.ctx }

// Renewed returns a channel that is closed when a renewal next moves the
// local deadline: then read Deadline or BootDeadline again, and call
// Renewed again for the renewal after. Call it before reading the
// deadline, so that no renewal can fall between the two unseen. Once the
// term has ended the channel is never closed: wait on Context().Done() too.
// It is for code that hands the deadline on (to a watchdog, another
// process, a timer of its own) and waits for news instead of polling.
func (t *Term) Renewed() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.renewed == nil {
		t.renewed = make(chan struct{})
	}
	return t.renewed
}

// Check returns nil while the term is live and its local deadline has not
// passed, and an error wrapping ErrNotLeader otherwise. Call it right before
// every action that must only happen while leading; it reads the monotonic
// clock, so it is right even when the timer that cancels the context has not
// fired yet.
func (t *Term) Check() error {
	if err := t.ctx.Err(); err != nil {
		return t.cause()
	}
	t.mu.Lock()
	over := t.overLocked()
	t.mu.Unlock()
	if over >= 0 {
		err := fmt.Errorf("%w: term %d on %q passed its local deadline %s ago", ErrNotLeader, t.token, t.key, over)
		t.end(err)
		return t.cause()
	}
	return nil
}

// StepDown ends the term now with cause (which is wrapped so that the
// term's error matches ErrNotLeader). Pass the error a resource returned when
// it rejected the token as stale: the Elector then records "fenced by
// resource". StepDown on an ended term does nothing.
func (t *Term) StepDown(cause error) {
	if cause == nil {
		cause = fmt.Errorf("%w: %w", ErrNotLeader, errSteppedDown)
	} else {
		cause = fmt.Errorf("%w: %w: %w", ErrNotLeader, errSteppedDown, cause)
	}
	t.end(cause)
}

func (t *Term) cause() error {
	err := context.Cause(t.ctx)
	if err == nil || err == context.Canceled {
		return fmt.Errorf("%w: term %d on %q ended", ErrNotLeader, t.token, t.key)
	}
	return err
}

// end marks the term ended and cancels its context with cause.
func (t *Term) end(cause error) {
	t.mu.Lock()
	if t.ended {
		t.mu.Unlock()
		// Another end is under way: return once it has cancelled the
		// context, which Check reads, so Check fails once end returns.
		<-t.ctx.Done()
		return
	}
	t.ended = true
	t.mu.Unlock()
	t.cancel(cause)
	t.lease.forget(t)
}

// isEnded reports whether the term has ended.
func (t *Term) isEnded() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ended
}

// The rest of this file is one term of an Elector, from campaign to
// release: the Elector acquires the key, waiting while another holds it
// (campaign, acquire, waitKey), begins a term on a lease of the term's own
// (begin), runs the user's function while the lease is kept (lead, renew),
// and ends by reporting why and releasing the key (ended, reportEnd,
// resign, release).

// campaign acquires the key, waiting for it to be free when it is held. It
// returns a live term, or ctx's error, or a permanent error.
func (e *Elector) campaign(ctx context.Context) (*Term, error) {
	retry := timing.RetryPeriod(e.cfg.TTL, e.cfg.RetryPeriod)
	backoff := retry

	// A watch, when the coordinator offers one, wakes the campaign the
	// moment the key is released or expires. It is opened lazily, the first
	// time the key is found held, and closed when the campaign ends.
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	var events <-chan LeaderEvent
	canWatch := true // until a watch fails
	down := outage.Log{Msg: "acquire failed"}

	for {
		g, err := e.acquire(ctx)
		var held *HeldError
		if err == nil || errors.As(err, &held) {
			down.Succeeded(e.log)
		}
		if err == nil {
			t, err := e.begin(ctx, g)
			if err != nil {
				return nil, err
			}
			if t != nil {
				return t, nil
			}
			// The reply came too late to act on; try again.
		} else {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if permanent(err) {
				return nil, fmt.Errorf("campaign for %q: %w", e.cfg.Key, err)
			}
			if held != nil {
				e.log.Debug("key held", "leader", held.Holder, "token", held.Token)
				if canWatch && events == nil {
					events = e.openWatch(watchCtx)
					canWatch = events != nil
				}
			} else {
				down.Failed(e.log, err)
			}
		}

		watching := events != nil
		var freed bool
		if events, freed, err = waitKey(ctx, jitter(backoff), events); err != nil {
			return nil, err
		}
		if watching && events == nil {
			canWatch = false // the watch failed: poll from now on
		}
		if backoff = min(2*backoff, 4*retry); freed {
			backoff = retry
		}
	}
}

// waitKey waits for d, until ctx ends, or until events says the key was
// released or expired (freed). It returns events, or nil once the watch
// has failed.
func waitKey(ctx context.Context, d time.Duration, events <-chan LeaderEvent) (_ <-chan LeaderEvent, freed bool, err error) {
	timer := time.NewTimer(timerwait.Delay(d))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return events, false, ctx.Err()
		case <-timer.C:
			return events, false, nil
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if !ev.Held { // released or expired: acquire now
				return events, true, nil
			}
		}
	}
}

// acquire asks for the key once, bounded by the request timeout.
func (e *Elector) acquire(ctx context.Context) (Grant, error) {
	ctx, cancel := context.WithTimeout(ctx, timing.RequestTimeout(e.cfg.TTL, e.cfg.RenewInterval, e.cfg.RequestTimeout))
	defer cancel()
	return e.c.Acquire(ctx, e.cfg.Key, e.id, e.cfg.TTL)
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

// transition reports a transition to metrics and the OnTransition hook.
func (e *Elector) transition(kind TransitionKind, t *Term, err error) {
	e.metrics.Transition(t.key, kind)
	if e.cfg.OnTransition != nil {
		e.cfg.OnTransition(Transition{Kind: kind, Key: t.key, Holder: t.holder, Token: t.token, At: time.Now(), Err: err})
	}
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
