package etcd_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/timing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/tenure-dev/tenure"
)

// Issue #18's scenarios, each red on the etcd backend before "the simple
// token path" (one lease per grant, no hand-off, deadlines from Grant.Sent)
// and green after. They use only what both share (Electors, Acquire,
// Release, clientv3) and inject their faults below the etcd client.

// contenderConfig is the Elector configuration of holder for key: its
// identity is fixed (Holder#Instance), renewals every TTL/3, retries every
// 200ms.
func contenderConfig(key, holder string, ttl time.Duration) tenure.Config {
	cfg := tenure.DefaultConfig()
	cfg.Key, cfg.Holder, cfg.Instance, cfg.TTL = key, holder, "i-"+holder, ttl
	cfg.Margin, cfg.RetryPeriod = 500*time.Millisecond, 200*time.Millisecond
	return cfg
}

// waitRefused waits until the Acquire of r was refused once.
func waitRefused(t *testing.T, r *refusals, who string) time.Time {
	t.Helper()
	select {
	case <-r.refused:
		return time.Now()
	case <-time.After(10 * time.Second):
		t.Fatalf("%s was not refused within 10s", who)
		return time.Time{}
	}
}

// TestStaleWatchViewGrantsNothing is scenario 1: bob's keepalive replies are
// lost after etcd applied them, so bob counts his lease as run out while
// etcd keeps it; his watch responses are held back after his first event on
// the key; a third contender, dave, races him. Before the simple token path,
// alice's release handed the key to bob, bob's Acquire deleted it as his own
// earlier grant without recording its token as given, dave took the key,
// and once a keepalive reply got through bob's next Acquire returned the
// deleted grant from his stale watch view: two leaders. Now no two terms
// overlap and every term begins on the token etcd holds.
func TestStaleWatchViewGrantsNothing(t *testing.T) {
	t.Parallel()
	eps := startEtcd(t)
	const key, ttl = "stale/k", 2 * time.Second
	kaThrough, txnsGo, watchGo := newGate(t), newGate(t), newGate(t)
	defer kaThrough.open()
	defer txnsGo.open()
	defer watchGo.open()
	plain := newClient(t, eps)
	ca := newCoordinator(t, plain)
	ek := ca.EtcdKey(key)

	var deleted, sawKey atomic.Bool
	bobFaults := rpcHooks{
		// Once bob has deleted the key, his writes wait for dave to lead.
		call: func(ctx context.Context, method string, _ any) error {
			if method == rpcTxn && deleted.Load() {
				return txnsGo.wait(ctx)
			}
			return nil
		},
		reply: func(_ string, _ stamp, req, reply any, err error) error {
			if r, ok := reply.(*pb.TxnResponse); ok && err == nil && r.Succeeded && txnDeletes(req, ek) {
				deleted.Store(true)
			}
			return err
		},
		recv: func(s *rpcStream, msg any) error {
			switch msg.(type) {
			case *pb.LeaseKeepAliveResponse:
				if !kaThrough.isOpen() {
					return errDropped
				}
			case *pb.WatchResponse:
				if sawKey.Load() {
					return watchGo.wait(s.ctx)
				}
				sawKey.Store(watchSees(msg, ek))
			}
			return nil
		},
	}
	cb := &refusals{Coordinator: newCoordinator(t, hookedClient(t, eps, bobFaults)), refused: make(chan struct{})}
	cd := &refusals{Coordinator: newCoordinator(t, newClient(t, eps)), refused: make(chan struct{})}
	log := newTermLog(t, plain, ek, nil)

	ga := mustAcquire(t, ca, key, "alice", time.Minute) // alice holds until she releases
	alice := log.begin("alice", ga.Token)
	bob := contenderConfig(key, "bob", ttl)
	stopBob := runElector(t, cb, bob, log.lead("bob", bob, nil))
	refused := waitRefused(t, cb, "bob")
	time.Sleep(300 * time.Millisecond) // a coordinator that puts candidates in line has put bob
	dave := contenderConfig(key, "dave", ttl)
	stopDave := runElector(t, cd, dave, log.lead("dave", dave, nil))
	waitRefused(t, cd, "dave")
	// By now bob's own count of the lease he was granted before his
	// refusal has run out; etcd's has not.
	time.Sleep(time.Until(refused.Add(ttl + 300*time.Millisecond)))

	log.end(alice, time.Now())
	if err := ca.Release(ctx(t), ga); err != nil {
		t.Fatal(err)
	}
	if !log.waitFor(4*ttl, leads("dave")) {
		t.Fatalf("dave never led after alice's release")
	}
	kaThrough.open()
	txnsGo.open()
	// Give bob time for a keepalive reply and a few retries (at most 1.2s
	// apart): he must not lead while dave does.
	log.waitFor(ttl, func(spans []termSpan) bool { return spans[len(spans)-1].holder == "bob" })
	stopBob()
	stopDave()
	log.verify()
}

// TestDeadlineCountsTheLeaseWholeAge is scenario 2: TTL 4s, MaxDrift 0.2,
// and the least Margin Config.Validate accepts (MinMargin, 50ms; the
// scenario had 0, refused since). alice's second grant came on a
// lease her first had started 1.5s before; it reported only the time the
// lease had left, and the Elector applied the drift allowance to that
// remainder: a local deadline 0.3s after lease start + TTL·(1−MaxDrift).
// Now every local deadline is at most the last send that started or
// extended the term's lease, plus TTL·(1−MaxDrift) − Margin.
func TestDeadlineCountsTheLeaseWholeAge(t *testing.T) {
	t.Parallel()
	eps := startEtcd(t)
	leases := newLeaseLog()
	c := newCoordinator(t, hookedClient(t, eps, leases.hooks()))
	cfg := contenderConfig("drift/second", "alice", 4*time.Second)
	cfg.MaxDrift, cfg.Margin, cfg.RetryPeriod = 0.2, timing.MinMargin, 0
	mustAcquire(t, c, "drift/first", tenure.Identity(cfg.Holder, cfg.Instance), cfg.TTL) // alice's other grant
	time.Sleep(1500 * time.Millisecond)

	log := newTermLog(t, newClient(t, eps), c.EtcdKey(cfg.Key), leases)
	stop := runElector(t, c, cfg, log.lead("alice", cfg, nil))
	if !log.waitFor(10*time.Second, leads("alice")) {
		t.Fatal("alice never led")
	}
	stop() // the term's deadline has been checked at its start
	log.verify()
}

// TestStalledContenderNeverStrandsAKey is scenario 3: bob, first to wait for
// the key, stalls (his writes hang) while his process lives. Before the
// simple token path, alice's release handed the key to bob, whose
// coordinator kept its lease alive while he never took it: carol, live and
// waiting, could not lead until bob recovered. Now a released key is taken
// by a live contender within a round trip, and bob's stalled write, once it
// reaches etcd, is refused.
func TestStalledContenderNeverStrandsAKey(t *testing.T) {
	t.Parallel()
	eps := startEtcd(t)
	const key, ttl = "stalled/k", 2 * time.Second
	stall := newGate(t)
	defer stall.open()
	plain := newClient(t, eps)
	ca := newCoordinator(t, plain)
	var stalling atomic.Bool
	stalled := make(chan struct{})
	var once sync.Once
	bobCl := hookedClient(t, eps, rpcHooks{call: func(ctx context.Context, method string, _ any) error {
		if method == rpcTxn && stalling.Load() {
			once.Do(func() { close(stalled) })
			return stall.wait(ctx)
		}
		return nil
	}})
	cb := &refusals{Coordinator: newCoordinator(t, bobCl), refused: make(chan struct{})}
	cc := &refusals{Coordinator: newCoordinator(t, newClient(t, eps)), refused: make(chan struct{})}
	log := newTermLog(t, plain, ca.EtcdKey(key), nil)

	ga := mustAcquire(t, ca, key, "alice", time.Minute) // alice holds until she releases
	alice := log.begin("alice", ga.Token)
	bob := contenderConfig(key, "bob", ttl)
	bob.RetryPeriod, bob.RequestTimeout = 100*time.Millisecond, time.Minute
	stopBob := runElector(t, cb, bob, log.lead("bob", bob, nil))
	waitRefused(t, cb, "bob")
	time.Sleep(300 * time.Millisecond) // a coordinator that puts candidates in line has put bob first
	carol := contenderConfig(key, "carol", ttl)
	stopCarol := runElector(t, cc, carol, log.lead("carol", carol, nil))
	waitRefused(t, cc, "carol")
	time.Sleep(300 * time.Millisecond)
	stalling.Store(true)
	select {
	case <-stalled:
	case <-time.After(5 * time.Second):
		t.Fatal("bob made no write within 5s")
	}

	log.end(alice, time.Now())
	released := time.Now()
	if err := ca.Release(ctx(t), ga); err != nil {
		t.Fatal(err)
	}
	const roundTrip = time.Second // a watch event and one or two writes, with slack for a loaded machine
	if log.waitFor(roundTrip, leads("carol")) {
		t.Logf("carol led %s after alice's release", time.Since(released).Round(time.Millisecond))
	} else {
		g, held, err := ca.Leader(ctx(t), key)
		t.Errorf("carol, live and waiting, did not lead within %s of alice's release while bob stalled; Leader() = %v, %v, %v", roundTrip, g, held, err)
	}
	stall.open()
	log.waitFor(ttl/2, leads("bob")) // bob's stalled write reaches etcd now
	stopBob()
	stopCarol()
	log.verify()
}
