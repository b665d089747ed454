package tenure_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
)

// A Lease's calls made at once and twice, with real goroutines under -race:
// two Keep loops renewing the same lease (one reply in three an error),
// terms started, checked and each ended twice from two goroutines, Stop
// called twice while all that goes on. A term passes Check after no End
// that returned, and a term started after Stop returned is over at once;
// both Keep loops return when cancelled.
func TestLeaseCallsAtOnceAndTwice(t *testing.T) {
	cfg := tenure.DefaultConfig()
	cfg.Key, cfg.Holder = "g", "h"
	cfg.TTL, cfg.RenewInterval, cfg.RetryPeriod = 2*time.Second, 5*time.Millisecond, 5*time.Millisecond
	l, err := tenure.NewLease(cfg, cfg.TTL, tenure.Now())
	if err != nil {
		t.Fatalf("NewLease() = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int64
	renew := func(context.Context, time.Time) (tenure.Grant, time.Time, error) {
		if calls.Add(1)%3 == 0 {
			return tenure.Grant{}, time.Time{}, errors.New("connection reset")
		}
		return tenure.Grant{TTL: cfg.TTL, Sent: tenure.Now()}, time.Time{}, nil
	}
	kept := make(chan error, 2)
	for range 2 {
		go func() { kept <- l.Keep(ctx, renew) }()
	}
	var (
		token   atomic.Uint64
		stopped atomic.Bool
		work    sync.WaitGroup
		errs    = make(chan string, 100)
	)
	for w := range 4 {
		work.Go(func() {
			for i := range 300 {
				if w == 0 && i == 150 {
					stopTwice(l)
					stopped.Store(true)
				}
				after := stopped.Load()
				term := l.Start(context.Background(), tenure.Grant{Key: "g/0", Holder: "h", Token: token.Add(1)})
				if after && term.Check() == nil {
					errs <- "a term started after Stop returned passes Check"
					return
				}
				_ = term.Check()
				endTwice(l, term)
				if term.Check() == nil {
					errs <- "a term passes Check after End returned"
					return
				}
			}
		})
	}
	work.Wait()
	cancel()
	for range 2 {
		select {
		case err := <-kept:
			if err != nil {
				t.Errorf("Keep() = %v; want nil (cancelled)", err)
			}
		case <-time.After(time.Minute):
			t.Fatal("Keep() still running a minute after its context was cancelled")
		}
	}
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if calls.Load() == 0 {
		t.Error("no renewal was sent while the terms came and went")
	}
}

// endTwice ends term from two goroutines at once and returns once both
// calls have.
func endTwice(l *tenure.Lease, term *tenure.Term) {
	var both sync.WaitGroup
	for range 2 {
		both.Go(func() { l.End(term, nil) })
	}
	both.Wait()
}

// stopTwice stops l from two goroutines at once and returns once both
// calls have.
func stopTwice(l *tenure.Lease) {
	var both sync.WaitGroup
	for range 2 {
		both.Go(l.Stop)
	}
	both.Wait()
}
