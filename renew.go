package tenure

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tenure-dev/tenure/internal/timerwait"
)

// A renewal is what one renewal request of a lease came back with: the TTL
// granted and the send instant of the request (as in Grant), when it was
// answered, and its error.
type renewal struct {
	ttl     time.Duration
	sent    Instant
	replied time.Time
	took    time.Duration // from the send to the reply (set by renewOnce)
	err     error
}

// A renewFunc sends one renewal of a lease, bounded by ctx. next is when
// the renewal after it is due if it succeeds: work sent beside it (a
// partition member's check of what it owns) is bounded by it.
type renewFunc func(ctx context.Context, next time.Time) renewal

// keep is the one renewal loop: it renews l on the schedule (tm.next)
// until ctx ends, the coordinator reports the lease lost or refuses its
// renewal for good (then every term ends and keep returns that error), or,
// for a single lease, its term is over. A renewal that answers extends
// every term to the deadline it gives (or ends those already past it); a
// failed one is retried every retry period until the local deadline, and
// after it for a lease that outlives its terms.
func (l *lease) keep(ctx context.Context, renew renewFunc) error {
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
			if l.onLost != nil {
				l.onLost(err)
			}
			l.endAll(fmt.Errorf("%w: %w", ErrNotLeader, err))
			l.stop()
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
// the lease, and by the local deadline while it is ahead, after which a
// reply extends no term. A renewal still unanswered a retry period after
// it was sent is overdue: it says so then, not only when the attempt fails
// or times out.
func (l *lease) renewOnce(ctx context.Context, renew renewFunc) renewal {
	start := time.Now()
	ttl, remaining := l.granted()
	bound := start.Add(l.tm.timeout)
	if dl := l.deadline().mono; remaining > 0 && dl.Before(bound) {
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
	rn := renew(rctx, start.Add(l.tm.next(ttl, remaining)))
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
func (l *lease) settle(ctx context.Context, rn renewal) (next time.Duration, lost error) {
	retry := l.tm.retry
	if _, remaining := l.granted(); remaining > 0 {
		retry = min(retry, remaining)
	}
	switch err := rn.err; {
	case errors.Is(err, errNoSent):
		l.endAll(fmt.Errorf("%w: the coordinator renewed with %w", ErrNotLeader, err))
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
