package tenure

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tenure-dev/tenure/internal/boottime"
	"github.com/tenure-dev/tenure/internal/termhook"
)

func init() {
	termhook.BootDeadline = (*Term).bootDeadlineNow
	termhook.InstantBoot = func(i Instant) int64 { return int64(i.boot) }
	termhook.Renewed = (*Term).renewedChan
}

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
	renewed      chan struct{} // closed by the next extend; nil until renewedChan asks
}

// newTerm starts a term for g on a lease of its own whose local deadline
// is dl (the lease's timing is Config's defaults for g.TTL; only renewals,
// which this package's tests do not start, read it). The term's context is
// cancelled at the deadline unless the lease is extended.
func newTerm(parent context.Context, g Grant, dl Instant) *Term {
	l := newLeaseAt(newLeaseTiming(g.TTL, 0, 0, 0, 0, 0), g.TTL, g.Sent, dl, true, nil, "renewal")
	t := l.Start(parent, g)
	return t
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

// bootDeadlineNow is the local deadline on the boot clock (CLOCK_BOOTTIME on
// Linux: nanoseconds since the host booted, counting suspended time). It is
// the same instant as Deadline, measured from the same send time; unlike
// Deadline it can be handed to another process on the same host, as
// `tenure run` does to the guard that enforces it on the command.
func (t *Term) bootDeadlineNow() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return int64(t.bootDeadline)
}

// Remaining is how long until the local deadline, on whichever clock
// reaches it first; zero or negative once the term has ended.
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

// renewedChan returns a channel that is closed when a renewal next moves the
// local deadline: then read Deadline or the boot deadline again, and call
// it again for the renewal after. Call it before reading the
// deadline, so that no renewal can fall between the two unseen. Once the
// term has ended the channel is never closed: wait on Done too. It lets a
// caller that hands the deadline on (tenure run, to its guard) wait for
// news instead of polling.
func (t *Term) renewedChan() <-chan struct{} {
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
		return
	}
	t.ended = true
	t.mu.Unlock()
	t.cancel(cause)
	t.lease.forget(t)
}

// extend replaces the deadline with dl, the one renewal g produced (its
// lease calls it for each live term), and
// records g's TTL and send instant. The new deadline replaces the old even when it is earlier:
// a renewal sets the lease's expiry at the coordinator, so only the latest
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

// isEnded reports whether the term has ended.
func (t *Term) isEnded() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ended
}
