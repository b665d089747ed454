package tenure_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure/internal/display"
	"github.com/tenure-dev/tenure/internal/timing"

	"go.uber.org/goleak"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/fence"
	"github.com/tenure-dev/tenure/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testConfig is a config with a 3s TTL: renew every 1s, safe lease 2.67s.
func testConfig(holder string) tenure.Config {
	c := tenure.DefaultConfig()
	c.Key = "scheduler"
	c.Holder = holder
	c.TTL = 3 * time.Second
	c.Margin = 300 * time.Millisecond
	c.MaxDrift = 0.01
	return c
}

// recorder collects transitions.
type recorder struct {
	mu sync.Mutex
	ts []tenure.Transition
}

func (r *recorder) add(t tenure.Transition) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ts = append(r.ts, t)
}

func (r *recorder) kinds() []tenure.TransitionKind {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ks []tenure.TransitionKind
	for _, t := range r.ts {
		ks = append(ks, t.Kind)
	}
	return ks
}

func newElector(t *testing.T, c tenure.Coordinator, cfg tenure.Config) *tenure.Elector {
	t.Helper()
	e, err := tenure.NewElector(c, cfg)
	if err != nil {
		t.Fatalf("NewElector() = %v", err)
	}
	return e
}

func TestElectorResignsWhenFunctionReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := memory.New()
		defer c.Close()
		var rec recorder
		cfg := testConfig("a")
		cfg.OnTransition = rec.add
		e := newElector(t, c, cfg)

		var token uint64
		wantErr := errors.New("work finished with an error")
		err := e.Run(context.Background(), func(ctx context.Context, term *tenure.Term) error {
			token = term.Token()
			if err := term.Check(); err != nil {
				t.Errorf("Check() at the start of a term = %v", err)
			}
			if !e.IsLeader() {
				t.Error("IsLeader() = false inside the term")
			}
			time.Sleep(10 * time.Second) // several renewals
			if err := term.Check(); err != nil {
				t.Errorf("Check() after 10s of renewals = %v", err)
			}
			return wantErr
		})
		if !errors.Is(err, wantErr) {
			t.Fatalf("Run() = %v; want the function's error", err)
		}
		if token == 0 {
			t.Fatal("term token = 0")
		}
		if _, ok, _ := c.Leader(context.Background(), "scheduler"); ok {
			t.Fatal("key still held after Run returned; want it released")
		}
		if got, want := rec.kinds(), []tenure.TransitionKind{tenure.Elected, tenure.Resigned}; !equalKinds(got, want) {
			t.Fatalf("transitions = %v; want %v", got, want)
		}
		if e.IsLeader() || e.Term() != nil {
			t.Fatal("IsLeader() or Term() still report leadership after Run returned")
		}
	})
}

func equalKinds(a, b []tenure.TransitionKind) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestElectorShutdownWaitsForWorkThenReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := memory.New()
		defer c.Close()
		e := newElector(t, c, testConfig("a"))
		ctx, cancel := context.WithCancel(context.Background())
		var finished time.Time
		done := make(chan error)
		go func() {
			done <- e.Run(ctx, func(ctx context.Context, term *tenure.Term) error {
				<-ctx.Done() // stop taking new work
				// The in-flight item still runs under a live term.
				if err := term.Context().Err(); err != nil {
					t.Errorf("term context during the drain = %v; want live", err)
				}
				time.Sleep(500 * time.Millisecond) // in-flight work finishing
				if err := term.Check(); err != nil {
					t.Errorf("Check() while draining before the deadline = %v; want nil", err)
				}
				finished = time.Now()
				return nil
			})
		}()
		time.Sleep(5 * time.Second)
		cancel()
		stopped := time.Now()
		err := <-done
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run() = %v; want context.Canceled", err)
		}
		if got := finished.Sub(stopped); got != 500*time.Millisecond {
			t.Fatalf("in-flight work finished %s after shutdown; want 500ms (Run must wait for it)", got)
		}
		if _, ok, _ := c.Leader(context.Background(), "scheduler"); ok {
			t.Fatal("key held after shutdown; want released")
		}
	})
}

func TestElectorShutdownDrainBoundedByDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := memory.New()
		defer c.Close()
		e := newElector(t, c, testConfig("a"))
		ctx, cancel := context.WithCancel(context.Background())
		var deadline, termEnded time.Time
		done := make(chan error)
		go func() {
			done <- e.Run(ctx, func(ctx context.Context, term *tenure.Term) error {
				<-ctx.Done()
				<-term.Context().Done() // work that does not finish on its own
				termEnded = time.Now()
				deadline = term.Deadline() // final: renewals stopped at shutdown
				return nil
			})
		}()
		time.Sleep(5 * time.Second)
		cancel()
		stopped := time.Now()
		<-done
		if cfg := testConfig("a"); termEnded.Sub(stopped) > timing.SafeLease(3*time.Second, cfg.MaxDrift, cfg.Margin) {
			safe := timing.SafeLease(3*time.Second, cfg.MaxDrift, cfg.Margin)
			t.Fatalf("drain lasted %s after shutdown; want at most the safe lease %s", termEnded.Sub(stopped), safe)
		}
		if !termEnded.Equal(deadline) {
			t.Fatalf("a drain that never finished ended at %s; want at the local deadline %s", termEnded, deadline)
		}
		if _, ok, _ := c.Leader(context.Background(), "scheduler"); ok {
			t.Fatal("key held after shutdown; want released")
		}
	})
}

func TestElectorFailoverOnRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := memory.New()
		defer c.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()

		a := newElector(t, c, testConfig("a"))
		aCtx, stopA := context.WithCancel(ctx)
		aDone := make(chan struct{})
		aToken := make(chan uint64, 1)
		go func() {
			defer close(aDone)
			a.Run(aCtx, func(ctx context.Context, term *tenure.Term) error {
				aToken <- term.Token()
				<-ctx.Done()
				return nil
			})
		}()
		first := <-aToken

		b := newElector(t, c, testConfig("b"))
		bStarted := make(chan time.Time, 1)
		bToken := make(chan uint64, 1)
		bDone := make(chan struct{})
		go func() {
			defer close(bDone)
			b.Run(ctx, func(ctx context.Context, term *tenure.Term) error {
				bStarted <- time.Now()
				bToken <- term.Token()
				<-ctx.Done()
				return nil
			})
		}()
		time.Sleep(20 * time.Second) // b campaigns against a live leader
		select {
		case <-bStarted:
			t.Fatal("b led while a held a live lease")
		default:
		}
		stopA()
		released := time.Now()
		<-aDone
		took := (<-bStarted).Sub(released)
		if took != 0 {
			t.Fatalf("b took over %s after a released; want at once (the watch wakes it, no poll, no TTL wait)", took)
		}
		if second := <-bToken; second <= first {
			t.Fatalf("b's token = %d; want > a's %d", second, first)
		}
		cancel()
		<-bDone
	})
}

func TestElectorBlockedCoordinatorSelfDemotes(t *testing.T) {
	// The seed's third verification: a leader whose coordinator stops
	// answering stops acting by itself, within the TTL.
	synctest.Test(t, func(t *testing.T) {
		c := memory.New()
		defer c.Close()
		var rec recorder
		cfg := testConfig("a")
		cfg.OnTransition = rec.add
		e := newElector(t, c, cfg)

		type result struct {
			blockedAt, endedAt, lastOK, deadline time.Time
			lastCheckErr                         error
		}
		res := make(chan result, 1)
		stop := start(e, func(ctx context.Context, term *tenure.Term) error {
			time.Sleep(4 * time.Second)
			c.Block("a")
			r := result{blockedAt: time.Now()}
			for term.Check() == nil {
				r.lastOK = time.Now()
				r.deadline = term.Deadline()
				time.Sleep(10 * time.Millisecond)
			}
			<-ctx.Done()
			r.endedAt = time.Now()
			r.lastCheckErr = term.Check()
			res <- r
			return nil
		})
		r := <-res
		if took := r.endedAt.Sub(r.blockedAt); took > cfg.TTL {
			t.Fatalf("leader demoted %s after its coordinator blocked; want within the TTL (%s)", took, cfg.TTL)
		}
		if r.endedAt.After(r.deadline) {
			t.Fatalf("term ended at %s, after its local deadline %s", r.endedAt, r.deadline)
		}
		if !r.lastOK.Before(r.deadline) {
			t.Fatalf("Check() passed at %s, not before the deadline %s", r.lastOK, r.deadline)
		}
		if !errors.Is(r.lastCheckErr, tenure.ErrNotLeader) {
			t.Fatalf("Check() after demotion = %v; want ErrNotLeader", r.lastCheckErr)
		}
		waitFor(t, func() bool { return len(rec.kinds()) >= 2 })
		if got := rec.kinds()[1]; got != tenure.Expired {
			t.Fatalf("second transition = %v; want expired", got)
		}
		c.HealAll()
		stop()
	})
}

// start runs e.Run in the background and returns a function that stops it
// and waits for it to return.
func start(e *tenure.Elector, fn func(context.Context, *tenure.Term) error) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Run(ctx, fn)
	}()
	return func() { cancel(); <-done }
}

// waitFor waits inside a bubble, in virtual time, for cond.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for i := 0; i < 1000; i++ {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition not met within 10 simulated seconds")
}

func TestElectorRenewalLostEndsTermAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := memory.New()
		defer c.Close()
		var rec recorder
		cfg := testConfig("a")
		cfg.OnTransition = rec.add
		e := newElector(t, c, cfg)
		ended := make(chan time.Duration, 1)
		stop := start(e, func(ctx context.Context, term *tenure.Term) error {
			if len(ended) > 0 || term.Token() > 1 {
				<-ctx.Done()
				return nil
			}
			// Someone with the coordinator's keys releases our grant
			// behind our back (an operator, or a superseding grant).
			time.Sleep(1500 * time.Millisecond)
			if err := c.Release(context.Background(), term.Grant()); err != nil {
				t.Errorf("Release() = %v", err)
			}
			at := time.Now()
			<-ctx.Done()
			ended <- time.Since(at)
			return nil
		})
		// The next renewal (at 2s) reports the grant lost.
		if got := <-ended; got > time.Second {
			t.Fatalf("term ended %s after its grant was released; want at the next renewal (≤ 1s)", got)
		}
		waitFor(t, func() bool { return len(rec.kinds()) >= 2 })
		if got := rec.kinds()[1]; got != tenure.Lost {
			t.Fatalf("transition = %v; want lost", got)
		}
		stop()
	})
}

func TestElectorFencedByResourceStepsDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := memory.New()
		defer c.Close()
		reg := fence.NewRegister[string]()
		var rec recorder
		cfg := testConfig("a")
		cfg.OnTransition = rec.add
		e := newElector(t, c, cfg)
		terms := make(chan uint64, 4)
		calls := 0
		stop := start(e, func(ctx context.Context, term *tenure.Term) error {
			terms <- term.Token()
			calls++
			if calls == 1 {
				// Another writer got a newer token through first.
				if err := reg.Write(term.Token()+100, "newer"); err != nil {
					t.Errorf("Write(newer) = %v", err)
				}
			}
			if err := reg.Write(term.Token(), "mine"); err != nil {
				return err // stale: the elector steps down
			}
			<-ctx.Done()
			return nil
		})
		first := <-terms
		second := <-terms // it campaigned again and got a new term
		if second <= first {
			t.Fatalf("token after fencing = %d; want > %d", second, first)
		}
		if got := rec.kinds()[:3]; !equalKinds(got, []tenure.TransitionKind{tenure.Elected, tenure.Fenced, tenure.Elected}) {
			t.Fatalf("transitions = %v; want acquired, fenced, acquired", got)
		}
		stop()
		if got, _ := reg.Read(); got != "newer" {
			t.Fatalf("register = %q; the stale write must change nothing", got)
		}
	})
}

func TestElectorRejectsBadConfigAndCoordinator(t *testing.T) {
	if _, err := tenure.NewElector(nil, testConfig("a")); !errors.Is(err, tenure.ErrInvalidConfig) {
		t.Fatalf("NewElector(nil) = %v; want ErrInvalidConfig", err)
	}
	cfg := testConfig("a")
	cfg.Key = "../etc"
	c := memory.New()
	defer c.Close()
	if _, err := tenure.NewElector(c, cfg); !errors.Is(err, tenure.ErrInvalidKey) {
		t.Fatalf("NewElector(bad key) = %v; want ErrInvalidKey", err)
	}
}

func TestElectorRunTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := memory.New()
		defer c.Close()
		e := newElector(t, c, testConfig("a"))
		ctx, cancel := context.WithCancel(context.Background())
		started := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			e.Run(ctx, func(ctx context.Context, _ *tenure.Term) error { close(started); <-ctx.Done(); return nil })
		}()
		<-started
		if err := e.Run(ctx, func(context.Context, *tenure.Term) error { return nil }); err == nil {
			t.Fatal("second concurrent Run() = nil; want an error")
		}
		cancel()
		<-done
	})
}

// TestSameHolderNameTwoProcesses: two contenders given the same display
// name (two processes started with --holder "$(hostname)") are two
// identities; the second waits instead of replacing the first's grant.
func TestSameHolderNameTwoProcesses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := memory.New()
		defer c.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()

		var mu sync.Mutex
		leading := 0
		maxLeading := 0
		run := func(instance string) *tenure.Elector {
			cfg := testConfig("web-1")
			cfg.Instance = instance
			e := newElector(t, c, cfg)
			go func() {
				_ = e.Run(ctx, func(ctx context.Context, term *tenure.Term) error {
					mu.Lock()
					leading++
					maxLeading = max(maxLeading, leading)
					mu.Unlock()
					<-ctx.Done()
					mu.Lock()
					leading--
					mu.Unlock()
					return nil
				})
			}()
			return e
		}
		a, b := run("p1"), run("p2")
		if a.Identity() == b.Identity() {
			t.Fatalf("Identity() of two instances = %q for both; want different", a.Identity())
		}
		time.Sleep(30 * time.Second)
		synctest.Wait()
		mu.Lock()
		got := maxLeading
		mu.Unlock()
		if got != 1 {
			t.Fatalf("%d electors named %q led at once; want 1", got, "web-1")
		}
		g, ok, err := c.Leader(ctx, "scheduler")
		if err != nil || !ok {
			t.Fatalf("Leader() = %v, %v, %v", g, ok, err)
		}
		if name, inst := display.SplitIdentity(g.Holder); name != "web-1" || (inst != "p1" && inst != "p2") {
			t.Fatalf("SplitIdentity(%q) = %q, %q; want web-1 and p1 or p2", g.Holder, name, inst)
		}
		cancel()
		synctest.Wait()
	})
}
