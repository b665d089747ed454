package tenure_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/fence"
	"github.com/tenure-dev/tenure/memory"
)

// TestRenewalAttemptIsBounded: one renewal hangs (a half-open connection:
// the request vanishes). It must be abandoned and retried within the lease,
// not waited on until the local deadline.
func TestRenewalAttemptIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := memory.New()
		defer c.Close()
		var rec recorder
		cfg := testConfig("a") // TTL 3s: renew every 1s, safe lease 2.67s
		cfg.OnTransition = rec.add
		e := newElector(t, c, cfg)
		checked := make(chan error, 1)
		stop := start(e, func(ctx context.Context, term *tenure.Term) error {
			time.Sleep(500 * time.Millisecond)
			c.Block("a") // the renewal at 1s vanishes
			time.Sleep(time.Second)
			c.Heal("a") // later calls go through; the one in flight stays lost
			time.Sleep(3500 * time.Millisecond)
			checked <- term.Check()
			<-ctx.Done()
			return nil
		})
		if err := <-checked; err != nil {
			t.Fatalf("Check() 5s in, after one renewal hung = %v; want nil (the hung attempt abandoned and retried)", err)
		}
		stop()
		if got := rec.kinds(); len(got) != 2 || got[0] != tenure.Elected || got[1] != tenure.Resigned {
			t.Fatalf("transitions = %v; want [acquired released]", got)
		}
	})
}

// TestResignReleasesOnlyAfterFunctionReturns: on shutdown the function
// ignores its context and runs past the local deadline. The term ends at
// the deadline, but the key must not be released while the function may
// still write: until it returns, what is left of the lease keeps a
// successor out.
func TestResignReleasesOnlyAfterFunctionReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := memory.New()
		defer c.Close()
		cfg := testConfig("a") // TTL 3s, safe lease 2.67s
		e := newElector(t, c, cfg)
		var returned atomic.Bool
		stop := start(e, func(ctx context.Context, term *tenure.Term) error {
			time.Sleep(10 * time.Second) // ignores ctx
			returned.Store(true)
			return nil
		})
		time.Sleep(500 * time.Millisecond)
		stopped := make(chan struct{})
		go func() { stop(); close(stopped) }()
		time.Sleep(2400 * time.Millisecond) // 2.9s: past the local deadline, before the lease's expiry at 3s
		if g, held, err := c.Leader(context.Background(), "scheduler"); err != nil || !held || returned.Load() {
			t.Fatalf("Leader() past the local deadline while fn still runs = %v, %v, %v; want still held (released before fn returned)", g, held, err)
		}
		<-stopped
		if !returned.Load() {
			t.Fatal("Run returned before fn did")
		}
	})
}

// TestFencedTermBacksOff: a resource has seen a token higher than any this
// coordinator grants (restored from elsewhere). Every term is fenced at its
// first write; the elector must back off instead of spinning acquire →
// rejected → release.
func TestFencedTermBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := memory.New()
		defer c.Close()
		c.SetLatency("a", time.Millisecond, 0)
		reg := fence.NewRegister[string]()
		if err := reg.Write(1<<40, "from another coordinator"); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		terms := 0
		e := newElector(t, c, testConfig("a"))
		stop := start(e, func(ctx context.Context, term *tenure.Term) error {
			mu.Lock()
			terms++
			mu.Unlock()
			return reg.Write(term.Token(), "stale")
		})
		time.Sleep(time.Minute)
		stop()
		mu.Lock()
		defer mu.Unlock()
		// Backoff from 0.3s doubling to 3s: about 25 terms a minute, jittered.
		if terms > 40 {
			t.Fatalf("%d fenced terms in a minute; want at most 40 (back off after a fenced term)", terms)
		}
		if terms < 5 {
			t.Fatalf("%d fenced terms in a minute; want the elector to keep trying (at least 5)", terms)
		}
	})
}

// hangingWatch is the memory coordinator with a Watch whose setup never
// answers, as a hung coordinator connection would.
type hangingWatch struct{ *memory.Coordinator }

func (h hangingWatch) Watch(ctx context.Context, key string) (<-chan tenure.LeaderEvent, error) {
	<-ctx.Done()
	return nil, context.Cause(ctx)
}

// TestWatchSetupIsBounded: a follower whose watch setup hangs must fall
// back to polling and take over when the leader releases, not freeze.
func TestWatchSetupIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mc := memory.New()
		defer mc.Close()
		c := hangingWatch{mc}
		leaderCtx, resign := context.WithCancel(context.Background())
		a := newElector(t, c, testConfig("a"))
		aDone := make(chan struct{})
		go func() {
			defer close(aDone)
			_ = a.Run(leaderCtx, func(ctx context.Context, term *tenure.Term) error { <-ctx.Done(); return nil })
		}()
		time.Sleep(100 * time.Millisecond)
		b := newElector(t, c, testConfig("b"))
		led := make(chan time.Time, 1)
		stopB := start(b, func(ctx context.Context, term *tenure.Term) error {
			led <- time.Now()
			<-ctx.Done()
			return nil
		})
		time.Sleep(2 * time.Second) // b is campaigning, its watch setup hung
		resigned := time.Now()
		resign()
		<-aDone
		select {
		case at := <-led:
			if d := at.Sub(resigned); d > 5*time.Second {
				t.Fatalf("b took over %s after a resigned; want within 5s of polling", d)
			}
		case <-time.After(time.Minute):
			t.Fatal("b never took over: its campaign froze in a hung watch setup")
		}
		stopB()
	})
}
