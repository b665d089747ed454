package tenure_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/refusaltest"
	"github.com/tenure-dev/tenure/memory"
)

// refusing is a memory coordinator whose Acquire and Renew fail as mode
// says before they reach it, as a backend's do for a role that may not
// write (refuses) or a server that does not answer (transient).
type refusing struct {
	*memory.Coordinator
	refusaltest.Mode
}

func (c *refusing) Acquire(ctx context.Context, key, holder string, ttl time.Duration) (tenure.Grant, error) {
	if err := c.Fail("acquire"); err != nil {
		return tenure.Grant{}, err
	}
	return c.Coordinator.Acquire(ctx, key, holder, ttl)
}

func (c *refusing) Renew(ctx context.Context, g tenure.Grant) (tenure.Grant, error) {
	if err := c.Fail("renew"); err != nil {
		return tenure.Grant{}, err
	}
	return c.Coordinator.Renew(ctx, g)
}

// runInBackground runs e.Run(ctx, fn), sends its error on the channel
// returned and closes it.
func runInBackground(ctx context.Context, e *tenure.Elector, fn func(context.Context, *tenure.Term) error) <-chan error {
	done := make(chan error, 1)
	go func() {
		defer close(done)
		done <- e.Run(ctx, fn)
	}()
	return done
}

// awaitRun waits, in the bubble's virtual time, at most limit for the
// error of a Run (see runInBackground).
func awaitRun(t *testing.T, done <-chan error, limit time.Duration) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		t.Fatalf("Run still running %s after the coordinator refused for good; want it returned", limit)
		return nil
	}
}

// checkRefusal checks that err matches tenure.ErrRefused and still lets
// errors.As find the backend's own error.
func checkRefusal(t *testing.T, err error) {
	t.Helper()
	var re *refusaltest.RoleError
	if !errors.Is(err, tenure.ErrRefused) || !errors.As(err, &re) {
		t.Fatalf("Run() = %v; want an error matching tenure.ErrRefused and wrapping the coordinator's *refusaltest.RoleError", err)
	}
}

// TestElectorStopsWhenCampaignRefused: an Elector without a logger
// campaigns through a minute of timeouts (retried: Run keeps going), and
// then through a refusal that waiting does not cure: Run returns it within
// one backoff, having led never.
func TestElectorStopsWhenCampaignRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &refusing{Coordinator: memory.New()}
		defer c.Close()
		c.Set(refusaltest.Transient)
		cfg := testConfig("a") // no Logger
		e := newElector(t, c, cfg)
		ctx, cancel := context.WithCancel(context.Background())
		var done <-chan error
		defer func() { cancel(); <-done }()
		done = runInBackground(ctx, e, func(ctx context.Context, _ *tenure.Term) error {
			t.Error("fn called; the coordinator granted nothing")
			<-ctx.Done()
			return nil
		})
		time.Sleep(time.Minute)
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Run() = %v during timeouts; want it campaigning on", err)
		default:
		}
		c.Set(refusaltest.Refuses)
		// The campaign's backoff is at most 4 retry periods, jittered by up
		// to 1.5: the refusal is met at the next attempt.
		checkRefusal(t, awaitRun(t, done, 6*cfg.TTL))
	})
}

// TestElectorStopsWhenRenewalRefused: a leader's renewals time out for a
// moment (retried: the term lives on), and are then refused for good: the
// term ends at the next renewal (fn's ctx cancelled, reported as Lost with
// the refusal), and Run returns the refusal once fn has returned, without
// campaigning again.
func TestElectorStopsWhenRenewalRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &refusing{Coordinator: memory.New()}
		defer c.Close()
		var rec recorder
		cfg := testConfig("a") // TTL 3s: renew every 1s, safe lease 2.67s
		cfg.OnTransition = rec.add
		e := newElector(t, c, cfg)
		var returned atomic.Bool
		led := make(chan *tenure.Term, 2)
		ctx, cancel := context.WithCancel(context.Background())
		var done <-chan error
		defer func() { cancel(); <-done }()
		done = runInBackground(ctx, e, func(ctx context.Context, term *tenure.Term) error {
			led <- term
			<-ctx.Done()
			returned.Store(true)
			return nil
		})
		term := <-led
		c.Set(refusaltest.Transient)
		time.Sleep(1500 * time.Millisecond) // one renewal (at 1s) times out
		c.Set(refusaltest.Answers)
		time.Sleep(time.Second) // the retry succeeds
		if err := term.Check(); err != nil {
			t.Fatalf("Check() after a renewal timed out and was retried = %v; want nil", err)
		}
		c.Set(refusaltest.Refuses)
		checkRefusal(t, awaitRun(t, done, 2*time.Second)) // the next renewal
		if !returned.Load() {
			t.Error("Run returned before fn did")
		}
		if len(led) != 0 {
			t.Error("fn called again after the refusal: Run campaigned again")
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if len(rec.ts) != 2 || rec.ts[0].Kind != tenure.Elected || rec.ts[1].Kind != tenure.Lost || !errors.Is(rec.ts[1].Err, tenure.ErrRefused) {
			t.Errorf("transitions = %v; want [acquired lost], the loss matching tenure.ErrRefused", rec.ts)
		}
	})
}
