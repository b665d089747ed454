package tenure

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/tenure-dev/tenure/internal/timerwait"
	"github.com/tenure-dev/tenure/internal/timing"
)

// fencedBackoff is how long to wait before campaigning after n fenced terms
// in a row: the retry period, doubling with each, at most the TTL.
func (e *Elector) fencedBackoff(n int) time.Duration {
	d := timing.RetryPeriod(e.cfg.TTL, e.cfg.RetryPeriod)
	for i := 1; i < n && d < e.cfg.TTL; i++ {
		d *= 2
	}
	return min(d, e.cfg.TTL)
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

	for {
		g, err := e.acquire(ctx)
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
			var held *HeldError
			if errors.As(err, &held) {
				e.log.Debug("key held", "leader", held.Holder, "token", held.Token)
				if canWatch && events == nil {
					if ch, werr := e.watch(watchCtx, e.c); werr == nil {
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
