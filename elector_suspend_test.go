package tenure_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/memory"
)

// TestElectorDemotesAfterSuspend runs a leader whose host is suspended for
// longer than the TTL: Go's monotonic clock stands still, the boot clock
// does not. After resume its Check fails at once and its context ends,
// before a renewal could revive the term; a successor that acquired the key
// meanwhile is never overlapped.
func TestElectorDemotesAfterSuspend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		suspend, restore := tenure.SimulateSuspend()
		defer restore()
		c := memory.New()
		defer c.Close()
		e := newElector(t, c, testConfig("a"))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		type result struct {
			check   error
			stopped time.Duration
		}
		res := make(chan result, 1)
		var once sync.Once
		runDone := make(chan struct{})
		go func() {
			defer close(runDone)
			e.Run(ctx, func(ctx context.Context, term *tenure.Term) error {
				once.Do(func() { // the first term only; later ones just wait
					time.Sleep(time.Second)
					suspend(time.Minute)
					resumed := time.Now()
					r := result{check: term.Check()}
					<-ctx.Done()
					r.stopped = time.Since(resumed)
					res <- r
				})
				<-ctx.Done()
				return nil
			})
		}()
		r := <-res
		if !errors.Is(r.check, tenure.ErrNotLeader) {
			t.Fatalf("Check() after a 1-minute suspend with a 3s TTL = %v; want ErrNotLeader", r.check)
		}
		if r.stopped > time.Second {
			t.Fatalf("term context ended %s after resume; want within 1s", r.stopped)
		}
		cancel()
		<-runDone
	})
}
