package tenure

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tenure-dev/tenure/internal/timerwait"
)

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
