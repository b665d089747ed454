package etcd_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/timing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tenure-dev/tenure"
)

// Adversarial tests of Electors on the token path: leases granted ahead or
// kept by a Release, and every call's outcome made unknown at random.

// TestElectorDeadlineOnAReusedLease: a term on a lease that is older than
// the Acquire (granted ahead by a refused Acquire, or kept by the holder's
// own Release) has a local deadline, at its start and after every renewal,
// no later than the lease's last extension send + TTL·(1−MaxDrift) −
// Margin. TTL 4s, MaxDrift 0.2, and the least Margin (MinMargin, 50ms;
// issue #18's scenario 2 had 0, which Config.Validate now refuses).
func TestElectorDeadlineOnAReusedLease(t *testing.T) {
	t.Parallel() // it mostly waits for leases to age
	eps := startEtcd(t)
	plain := newClient(t, eps)
	config := func(key, holder string) tenure.Config {
		cfg := contenderConfig(key, holder, 4*time.Second)
		cfg.MaxDrift, cfg.Margin, cfg.RetryPeriod = 0.2, timing.MinMargin, 0
		return cfg
	}
	t.Run("granted ahead", func(t *testing.T) {
		t.Parallel()
		leases, rc := newLeaseLog(), &rpcCounter{calls: map[string]int{}}
		ca := newCoordinator(t, plain)
		cb := &refusals{Coordinator: newCoordinator(t, hookedClient(t, eps, leases.hooks(), rc.hooks())), refused: make(chan struct{})}
		bob := config("ahead/k", "bob")
		log := newTermLog(t, plain, ca.EtcdKey(bob.Key), leases)
		ga := mustAcquire(t, ca, bob.Key, "alice", time.Minute)
		stop := runElector(t, cb, bob, log.lead("bob", bob, nil))
		waitRefused(t, cb, "bob")
		// The lease granted ahead ages, but keeps the 2/3 of its TTL (2.67s
		// of 4s) that lets the next Acquire use it: 1.2s here left too
		// little room for the release and bob's acquisition on a loaded
		// machine (a new lease was granted in 1 full run of the suite).
		time.Sleep(500 * time.Millisecond)
		rc.reset()
		if err := ca.Release(ctx(t), ga); err != nil {
			t.Fatal(err)
		}
		if !log.waitFor(5*time.Second, leads("bob")) {
			t.Fatal("bob never led")
		}
		if n := rc.reset()[rpcGrant]; n != 0 {
			t.Fatalf("bob's Acquire after the release granted %d leases; this test needs the lease granted ahead", n)
		}
		time.Sleep(1500 * time.Millisecond) // a renewal or two
		stop()
		log.verify()
	})
	// Resign before the first renewal (about 1.07s in: a third of the safe
	// lease), or right after it (the lease kept was last extended by a
	// keepalive).
	for _, renewed := range []bool{false, true} {
		t.Run(fmt.Sprintf("kept by Release, renewed %v", renewed), func(t *testing.T) {
			t.Parallel()
			testKeptLease(t, eps, config(fmt.Sprintf("kept/%v", renewed), "alice"), renewed)
		})
	}
}

// testKeptLease checks the deadlines of an Elector for cfg that resigns
// its first term (0.8s in, or right after its first renewal) and leads
// again on the lease its Release kept.
func testKeptLease(t *testing.T, eps []string, cfg tenure.Config, renewed bool) {
	leases, rc := newLeaseLog(), &rpcCounter{calls: map[string]int{}}
	c := newCoordinator(t, hookedClient(t, eps, leases.hooks(), rc.hooks()))
	log := newTermLog(t, newClient(t, eps), c.EtcdKey(cfg.Key), leases)
	var terms atomic.Int32
	stop := runElector(t, c, cfg, log.lead(cfg.Holder, cfg, func(ctx context.Context, term *tenure.Term) {
		if terms.Add(1) > 1 {
			<-ctx.Done()
			return
		}
		if !renewed {
			_ = sleepCtx(ctx, 800*time.Millisecond)
		}
		for first := term.Deadline(); renewed && term.Deadline().Equal(first) && ctx.Err() == nil; {
			_ = sleepCtx(ctx, 5*time.Millisecond)
		}
		rc.reset()
	}))
	if !log.waitFor(10*time.Second, func(s []termSpan) bool { return len(s) == 2 }) {
		t.Fatalf("%s did not lead twice", cfg.Holder)
	}
	if n := rc.reset()[rpcGrant]; n != 0 {
		t.Fatalf("the second Acquire granted %d leases; this test needs the lease the Release kept", n)
	}
	time.Sleep(1500 * time.Millisecond)
	stop()
	log.verify()
}

// errLostRequest is what a client sees for a request a hook lost before
// sending it.
var errLostRequest = status.Error(codes.Unknown, "grpcfault: request lost before it was sent")
