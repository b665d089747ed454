package tenure

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/tenure-dev/tenure/internal/timerwait"
	"github.com/tenure-dev/tenure/internal/timing"
)

// suspendCheck bounds how long a lease's timer sleeps at a time. Go's
// timers run on CLOCK_MONOTONIC, which stops while the host is suspended: a
// term whose boot-clock deadline passed during a suspend is ended within
// suspendCheck of the resume, and Check reports it over at once.
const suspendCheck = time.Second

// suspendNoise is how far the boot clock may run ahead of Go's monotonic
// clock before the difference counts as a suspend. Two clocks read a moment
// apart differ by scheduling noise; inside a testing/synctest bubble, whose
// virtual time stands still while goroutines compute, the real boot clock
// runs ahead by however long they compute. A suspend shorter than this is
// of the same order as the scheduling delays Config.Margin allows for, and
// Config.Validate requires a Margin at least this long.
const suspendNoise = timing.MinMargin

// errNoSent is the one rule for a grant that does not say when the request
// that started or extended its lease was sent: it has no safe deadline.
var errNoSent = errors.New("no send time (Grant.Sent, Member.Sent): the lease's age is unknown, so no safe local deadline can be computed")

// leaseTiming is how a lease is kept: the settings of Config (or of a
// partition group's), with their defaults applied.
type leaseTiming struct {
	renew, retry, timeout time.Duration
	maxDrift              float64
	margin                time.Duration
}

// newLeaseTiming applies the defaults of Config's RenewInterval,
// RetryPeriod and RequestTimeout for ttl.
func newLeaseTiming(ttl, renew, retry, timeout time.Duration, maxDrift float64, margin time.Duration) leaseTiming {
	return leaseTiming{
		renew:    timing.RenewInterval(ttl, renew),
		retry:    timing.RetryPeriod(ttl, retry),
		timeout:  timing.RequestTimeout(ttl, renew, timeout),
		maxDrift: maxDrift, margin: margin,
	}
}

// deadline is the one deadline rule: the local deadline of a lease granted
// for ttl by a request sent at sent is sent + ttl·(1 − MaxDrift) − Margin,
// on both clocks. A zero sent has none (errNoSent). A TTL of zero or less
// grants nothing: the deadline is Margin before sent, never a negative TTL
// whose arithmetic overflows into the future.
func (tm leaseTiming) deadline(ttl time.Duration, sent Instant) (Instant, error) {
	if sent.IsZero() {
		return Instant{}, errNoSent
	}
	return sent.Add(timing.SafeLease(max(ttl, 0), tm.maxDrift, tm.margin)), nil
}

// next is the renewal schedule: how long after a renewal (or the grant) of
// a lease granted for ttl, with remaining left until its local deadline,
// the next renewal is due (timing.NextRenewal).
func (tm leaseTiming) next(ttl, remaining time.Duration) time.Duration {
	return timing.NextRenewal(tm.renew, ttl, remaining)
}

// A Lease is this process's side of one lease at a coordinator: its local
// deadline, counted from the send of the request that last started or
// extended it (sent + TTL·(1 − MaxDrift) − Margin, on a clock that keeps
// counting while the host is suspended), the one timer that ends every term
// riding it at that deadline, and the one loop that renews it (Keep). An
// Elector rides one term on a lease of its own; a partition.Group member
// rides one term per partition on its membership's lease, so that one
// renewal keeps them all, as etcd's concurrency.Session carries the keys of
// an Election or a Mutex. A Lease is safe for concurrent use.
//
// Each term keeps the deadline its lease last gave it: a term that has
// ended keeps the deadline it ended with, and a renewal never revives it.
type Lease struct {
	tm     leaseTiming
	single bool // an Elector's: over when its one term is
	log    *slog.Logger
	name   string // what a renewal is called in the log: "renewal", "membership renewal"
	attrs  []any  // logged with every renewal record

	mu      sync.Mutex
	ttl     time.Duration // as last granted
	dl      Instant
	terms   map[*Term]struct{}
	timer   *time.Timer
	stopped bool
}

// NewLease returns the lease that a request sent at sent granted for ttl
// (a Grant's or a partition.Member's TTL and Sent), kept by cfg's
// MaxDrift, Margin, RenewInterval, RetryPeriod and RequestTimeout, and
// logged to cfg.Logger. A lease whose sent is zero has no safe deadline:
// NewLease returns an error. Stop it when done with it.
func NewLease(cfg Config, ttl time.Duration, sent Instant) (*Lease, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tm := newLeaseTiming(cfg.TTL, cfg.RenewInterval, cfg.RetryPeriod, cfg.RequestTimeout, cfg.MaxDrift, cfg.Margin)
	return newLease(tm, ttl, sent, false, log, "renewal")
}

// newLease returns a lease granted for ttl by a request sent at sent,
// watched by one timer until Stop, or errNoSent when sent is zero.
func newLease(tm leaseTiming, ttl time.Duration, sent Instant, single bool, log *slog.Logger, name string, attrs ...any) (*Lease, error) {
	dl, err := tm.deadline(ttl, sent)
	if err != nil {
		return nil, err
	}
	l := &Lease{tm: tm, single: single, log: log, name: name, attrs: attrs,
		ttl: ttl, dl: dl, terms: make(map[*Term]struct{})}
	l.mu.Lock() // expire, which locks, may run before l.timer is set
	l.timer = time.AfterFunc(l.sleepLocked(), l.expire)
	l.mu.Unlock()
	return l, nil
}

// Start starts a term for grant g on l, with l's deadline; its context
// derives from parent's values, not its cancellation. End ends it alone.
// Past the deadline, after Stop, or once Keep has found l lost, Start
// returns a term already ended.
func (l *Lease) Start(parent context.Context, g Grant) *Term {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(parent))
	l.mu.Lock()
	t := &Term{
		key: g.Key, holder: g.Holder, token: g.Token,
		ctx: ctx, cancel: cancel, lease: l,
		ttl: g.TTL, sent: g.Sent, deadline: l.dl.mono, bootDeadline: l.dl.boot,
	}
	over := l.stopped || l.dl.past() >= 0
	if !over {
		l.terms[t] = struct{}{}
	}
	l.mu.Unlock()
	if over {
		t.end(fmt.Errorf("%w: term %d on %q started past its deadline, or after it stopped", ErrNotLeader, t.token, t.key))
	}
	return t
}

// End ends term t of l now with cause, which should wrap ErrNotLeader (and
// ErrLost or ErrStaleToken when those are the reason); a nil cause records
// a plain end. Ending an ended term does nothing. Once End returns, t's
// context is cancelled and Check fails, even while another goroutine's End
// of t is under way.
func (l *Lease) End(t *Term, cause error) {
	if cause == nil {
		cause = ErrNotLeader
	}
	t.end(cause)
	<-t.ctx.Done() // an end under way elsewhere has marked t ended, and cancels it next
}

// extend moves l's deadline to dl, the one renewal that granted g.TTL and
// was sent at g.Sent, for every live term. A term whose deadline has
// passed is not revived: it is ended now. extend reports whether every
// term was extended (false for a single lease whose term has ended).
func (l *Lease) extend(g Grant, dl Instant) bool {
	l.mu.Lock()
	l.ttl, l.dl = g.TTL, dl
	terms := l.snapshotLocked()
	if !l.stopped {
		l.timer.Reset(l.sleepLocked())
	}
	l.mu.Unlock()
	ok := !l.single || len(terms) > 0
	for _, t := range terms {
		if !t.extend(g, dl) {
			ok = false
			t.end(fmt.Errorf("%w: term %d on %q: renewal arrived after the local deadline", ErrNotLeader, t.token, t.key))
		}
	}
	return ok
}

// extend replaces term t's deadline with dl, the one renewal g produced
// (Lease.extend calls it for each live term), and records g's TTL and send
// instant. The new deadline replaces the old even when it is earlier: a
// renewal sets the lease's expiry at the coordinator, so only the latest
// renewal bounds it (a coordinator that granted a shorter TTL this time has
// shortened the lease). It reports false when the term has already ended:
// an ended term is never revived.
func (t *Term) extend(g Grant, dl Instant) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended || t.overLocked() >= 0 {
		return false
	}
	t.ttl, t.sent = g.TTL, g.Sent
	t.deadline, t.bootDeadline = dl.mono, dl.boot
	if t.renewed != nil {
		close(t.renewed)
		t.renewed = nil
	}
	return true
}

// void ends every live term of l with cause and moves l's deadline to
// now: a renewal answered without a send time leaves no safe deadline, so
// a term started on l is over at once until a renewal gives it one again.
func (l *Lease) void(cause error) {
	l.mu.Lock()
	l.dl = Now()
	terms := l.snapshotLocked()
	l.mu.Unlock()
	for _, t := range terms {
		t.end(cause)
	}
}

// lose stops l and ends every live term with cause, in one step: a term
// started once l is lost is started ended, never left live on a lease the
// coordinator has given away.
func (l *Lease) lose(cause error) {
	l.mu.Lock()
	l.stopped = true
	l.timer.Stop()
	terms := l.snapshotLocked()
	l.mu.Unlock()
	for _, t := range terms {
		t.end(cause)
	}
}

// Stop stops l's timer: its terms no longer end at its deadline on their
// own, but the terms still live are not ended either: their owner ends
// them (Check fails once their deadline has passed, whatever).
func (l *Lease) Stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopped = true
	l.timer.Stop()
}

// Deadline is l's local deadline, as last renewed.
func (l *Lease) Deadline() Instant {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dl
}

// granted is the TTL l was last granted and how long until its deadline.
func (l *Lease) granted() (ttl, remaining time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ttl, -l.dl.past()
}

// sleepLocked is how long the timer should sleep: until the deadline, at
// most suspendCheck at a time.
func (l *Lease) sleepLocked() time.Duration {
	return timerwait.Delay(min(-l.dl.past(), suspendCheck))
}

// rearm sets the timer again for the deadline as it stands: a timer set
// before a host suspend sleeps on Go's clock, which the suspend stopped.
func (l *Lease) rearm() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.stopped {
		l.timer.Reset(l.sleepLocked())
	}
}

// snapshotLocked lists l's live terms.
func (l *Lease) snapshotLocked() []*Term {
	out := make([]*Term, 0, len(l.terms))
	for t := range l.terms {
		out = append(out, t)
	}
	return out
}

// expire runs when the timer fires: it ends every term once the deadline
// has passed, and sleeps again otherwise.
func (l *Lease) expire() {
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return
	}
	if l.dl.past() < 0 {
		l.timer.Reset(l.sleepLocked())
		l.mu.Unlock()
		return
	}
	terms := l.snapshotLocked()
	l.mu.Unlock()
	for _, t := range terms {
		t.end(fmt.Errorf("%w: term %d on %q reached its local deadline", ErrNotLeader, t.token, t.key))
	}
}

// forget removes t, which has ended. A single lease stops with its term.
func (l *Lease) forget(t *Term) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.terms, t)
	if l.single && len(l.terms) == 0 {
		l.stopped = true
		l.timer.Stop()
	}
}

// over reports whether a single lease is over: its term ended, or its
// deadline passed (which ends it).
func (l *Lease) over() bool {
	l.mu.Lock()
	terms := l.snapshotLocked()
	l.mu.Unlock()
	if len(terms) == 0 {
		return true
	}
	for _, t := range terms {
		if t.Check() != nil {
			return true
		}
	}
	return false
}

// A renewal is what one renewal request of a lease came back with.
type renewal struct {
	ttl     time.Duration
	sent    Instant
	replied time.Time
	took    time.Duration // from the send to the reply
	err     error
}

// Keep renews l until ctx ends, or the coordinator reports the lease lost
// or refuses its renewal for good (an error matching ErrLost or
// ErrRefused: then every term ends, l stops, and Keep returns that error),
// or the one term of an Elector's lease is over. It returns nil otherwise.
//
// renew sends one renewal, bounded by its ctx (the request timeout; for an
// Elector's lease, the local deadline too),
// and returns the grant it got (its TTL and Sent are read) and when the
// coordinator answered (zero: when renew returned). next is when the
// renewal after it is due, should it succeed: bound work sent beside it by
// next, so that it never delays the next renewal.
//
// Renewals follow one schedule: every Config.RenewInterval (TTL/3), but
// never more than a third of the TTL granted nor half the time left. One
// that answers extends every term to the deadline it gives (and ends those
// already past theirs: an ended term is never revived); a renewal without a
// send time ends every term, and a term started before the next renewal
// that has one is over at once. A renewal still unanswered a retry period
// after it was sent is logged as overdue then; a failed one is retried every
// Config.RetryPeriod until the local deadline (and after it: a lease can
// outlive its terms).
func (l *Lease) Keep(ctx context.Context, renew func(ctx context.Context, next time.Time) (g Grant, replied time.Time, err error)) error {
	timer := time.NewTimer(timerwait.Delay(l.tm.next(l.granted())))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
		rn := l.renewOnce(ctx, renew)
		if ctx.Err() != nil { // stopped while the renewal was in flight
			return nil
		}
		next, err := l.settle(ctx, rn)
		if err != nil {
			l.lose(fmt.Errorf("%w: %w", ErrNotLeader, err))
			return err
		}
		if l.single && l.over() {
			return nil
		}
		l.rearm()
		timer.Reset(timerwait.Delay(next - time.Since(rn.replied)))
	}
}

// renewOnce sends one renewal, bounded by the request timeout, so that a
// renewal hung on a half-open connection is abandoned and retried within
// the lease, and, for an Elector's lease, by the local deadline, after
// which a reply is of no use: its one term is over. (A membership's lease
// outlives its terms: a late reply still keeps the member in its group.) A renewal still unanswered a retry period after
// it was sent is overdue: it says so then, not only when the attempt fails
// or times out.
func (l *Lease) renewOnce(ctx context.Context, renew func(context.Context, time.Time) (Grant, time.Time, error)) renewal {
	start := time.Now()
	ttl, remaining := l.granted()
	bound := start.Add(l.tm.timeout)
	if dl := l.Deadline().mono; l.single && remaining > 0 && dl.Before(bound) {
		bound = dl
	}
	rctx, cancel := context.WithDeadline(ctx, bound)
	defer cancel()
	overdue := time.AfterFunc(timerwait.Delay(l.tm.retry), func() {
		_, remaining := l.granted()
		l.log.Warn(l.name+" overdue", append(l.attrs[:len(l.attrs):len(l.attrs)], "cause",
			fmt.Sprintf("no reply from the coordinator to the %s sent %s ago", l.name, time.Since(start).Round(time.Millisecond)),
			"remaining", remaining.Round(time.Millisecond))...)
	})
	defer overdue.Stop()
	g, replied, err := renew(rctx, start.Add(l.tm.next(ttl, remaining)))
	rn := renewal{ttl: g.TTL, sent: g.Sent, replied: replied, err: err}
	if rn.replied.IsZero() {
		rn.replied = time.Now()
	}
	rn.took = rn.replied.Sub(start)
	if rn.err == nil && rn.sent.IsZero() {
		rn.err = errNoSent
	}
	return rn
}

// settle acts on renewal rn: extend or end, and when the next renewal is
// due. It returns an error (wrapping ErrLost or ErrRefused) when the lease
// is lost: renewing again cannot keep it.
func (l *Lease) settle(ctx context.Context, rn renewal) (next time.Duration, lost error) {
	retry := l.tm.retry
	if _, remaining := l.granted(); remaining > 0 {
		retry = min(retry, remaining)
	}
	switch err := rn.err; {
	case errors.Is(err, errNoSent):
		l.void(fmt.Errorf("%w: the coordinator renewed with %w", ErrNotLeader, err))
		return retry, nil
	case err == nil:
		dl, _ := l.tm.deadline(rn.ttl, rn.sent)
		if !l.extend(Grant{TTL: rn.ttl, Sent: rn.sent}, dl) {
			return retry, nil
		}
		ttl, remaining := l.granted()
		l.log.Debug(l.name+" answered", append(l.attrs[:len(l.attrs):len(l.attrs)], "took", rn.took, "remaining", remaining)...)
		return l.tm.next(ttl, remaining), nil
	case errors.Is(err, ErrLost) || errors.Is(err, ErrRefused):
		return 0, err
	default:
		if ctx.Err() == nil && !(l.single && l.over()) {
			_, remaining := l.granted()
			l.log.Warn(l.name+" failed; retrying until the local deadline", append(l.attrs[:len(l.attrs):len(l.attrs)],
				"took", rn.took, "remaining", remaining, "err", err)...)
		}
		return retry, nil
	}
}
