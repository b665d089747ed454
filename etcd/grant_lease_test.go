package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/etcd"
)

// Adversarial tests of the token path (grant.go): faults below
// the client at the worst moment between its steps, keys and leases changed
// by hand, concurrent calls. Each asserts what must hold: at most one live
// grant, a token never given twice, a grant never revived, and a grant never
// reporting more lease than etcd gives it.

// checkGrantLease fails the test when g reports more lease than etcd gives
// it: g.Sent + g.TTL after the last recorded send that started or extended
// the lease g's put went on, plus its TTL.
func checkGrantLease(t *testing.T, leases *leaseLog, g tenure.Grant) {
	t.Helper()
	id, ok := leases.leaseOfToken(g.Token)
	if !ok {
		t.Errorf("no put with token %d was recorded", g.Token)
		return
	}
	whole := tenure.Config{} // no drift, no margin: the lease itself
	if err := leases.checkDeadline(whole, id, g.Sent.Time().Add(g.TTL), g.Sent.Boot()+int64(g.TTL)); err != nil {
		t.Errorf("%v reports more lease than etcd gives it: %v", g, err)
	}
}

// wantLost fails the test unless renewing g through c reports it lost.
func wantLost(t *testing.T, c tenure.Coordinator, g tenure.Grant, why string) {
	t.Helper()
	if r, err := c.Renew(ctx(t), g); !errors.Is(err, tenure.ErrLost) {
		t.Errorf("Renew(%v) %s = %v, %v; want ErrLost (never revived)", g, why, r, err)
	}
}

// TestRenewReadsAfterItsKeepalive: the grant is released (by another
// coordinator) and bob takes the key, as Renew's read of the key is about to
// be sent (after the read that finds the lease of a grant another
// coordinator made). Renew sends its keepalive and that read at once; the
// read is what tells it the key was taken: Renew must report the grant
// lost, through the coordinator that granted it and through one that did
// not. (A takeover a moment after the read is seen by the next Renew,
// whatever the order of keepalive and read; the grant's deadline counts
// from a send before both.)
//
// Red when Renew's read (sent with the keepalive) read the grant's own
// revision, serializably, instead of the key as it is: "Renew(between/gra@2
// by "alice" (ttl 5s)) after its grant was released and taken by bob =
// between/gra@2 by "alice" (ttl 5s), <nil>; want ErrLost".
func TestRenewReadsAfterItsKeepalive(t *testing.T) {
	t.Parallel()
	eps := startEtcd(t)
	other := newCoordinator(t, newClient(t, eps))
	var reads atomic.Int32 // the reads of the key to let pass before the takeover, plus one
	var g tenure.Grant
	var between error
	hooks := rpcHooks{call: func(_ context.Context, method string, _ any) error {
		if method == rpcRange && reads.Add(-1) == 0 {
			c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			between = other.Release(c, g)
			if between == nil {
				_, between = other.Acquire(c, g.Key, "bob", 5*time.Second)
			}
		}
		return nil
	}}
	cl := hookedClient(t, eps, hooks)
	granting := newCoordinator(t, cl)
	for _, tc := range []struct {
		name   string
		renew  *etcd.Coordinator
		lookup int32 // reads that find the grant's lease first
	}{
		{"granting coordinator", granting, 0},
		{"another coordinator", newCoordinator(t, cl), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g = mustAcquire(t, granting, "between/"+tc.name[:3], "alice", 5*time.Second)
			reads.Store(tc.lookup + 1)
			r, err := tc.renew.Renew(ctx(t), g)
			if reads.Load() > 0 || between != nil {
				t.Fatalf("the release and bob's Acquire before Renew's read did not happen: %d reads to go, %v", reads.Load(), between)
			}
			if !errors.Is(err, tenure.ErrLost) {
				t.Errorf("Renew(%v) after its grant was released and taken by bob = %v, %v; want ErrLost", g, r, err)
			}
		})
	}
}

// TestLostAcquireReplyIsNeverGiven: etcd applies alice's put but its reply
// is lost. Her next Acquire supersedes the put she never saw, with a new
// token; the lost token is never given or renewed, and bob is refused with
// the live one.
func TestLostAcquireReplyIsNeverGiven(t *testing.T) {
	t.Parallel()
	eps := startEtcd(t)
	leases := newLeaseLog()
	var drop atomic.Bool
	c := newCoordinator(t, hookedClient(t, eps, leases.hooks(), loseNextReply(rpcTxn, &drop)))
	const key = "lostreply/k"
	drop.Store(true)
	if g, err := c.Acquire(ctx(t), key, "alice", 3*time.Second); err == nil || errors.Is(err, tenure.ErrHeld) {
		t.Fatalf("Acquire with its reply lost = %v, %v; want an error of unknown outcome", g, err)
	}
	lost, held, err := c.Leader(ctx(t), key)
	if err != nil || !held || lost.Holder != "alice" {
		t.Fatalf("Leader() after the lost reply = %v, %v, %v; want alice's put, applied", lost, held, err)
	}
	g := mustAcquire(t, c, key, "alice", 3*time.Second)
	if g.Token <= lost.Token {
		t.Errorf("Acquire after a lost reply: token %d; want > %d, the token never given", g.Token, lost.Token)
	}
	checkGrantLease(t, leases, g)
	wantLost(t, c, lost, "of the put whose reply was lost")
	if _, err := c.Renew(ctx(t), g); err != nil {
		t.Errorf("Renew(%v) = %v", g, err)
	}
	var he *tenure.HeldError
	if _, err := c.Acquire(ctx(t), key, "bob", 3*time.Second); !errors.As(err, &he) || he.Token != g.Token {
		t.Errorf("bob's Acquire = %v; want HeldError with alice's token %d", err, g.Token)
	}
}

// TestConcurrentAcquiresOfOneHolder: six Acquires of one key by one holder
// at once, through two coordinators that each kept a lease granted ahead
// for it. Each successful Acquire has a token of its own; at most one of
// the grants renews (the one etcd holds); and every grant reports no more
// lease than it has.
func TestConcurrentAcquiresOfOneHolder(t *testing.T) {
	t.Parallel()
	eps := startEtcd(t)
	leases := newLeaseLog()
	cs := []*etcd.Coordinator{
		newCoordinator(t, hookedClient(t, eps, leases.hooks())),
		newCoordinator(t, hookedClient(t, eps, leases.hooks())),
	}
	const key, ttl = "concurrent/k", 4 * time.Second
	gb := mustAcquire(t, cs[0], key, "bob", ttl)
	for _, c := range cs { // each keeps a lease granted ahead for alice
		if _, err := c.Acquire(ctx(t), key, "alice", ttl); !errors.Is(err, tenure.ErrHeld) {
			t.Fatalf("alice's Acquire of bob's key = %v; want ErrHeld", err)
		}
	}
	if err := cs[0].Release(ctx(t), gb); err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		grants []tenure.Grant
		wg     sync.WaitGroup
		start  = make(chan struct{})
	)
	for i := range 6 {
		wg.Go(func() {
			<-start
			g, err := cs[i%2].Acquire(ctx(t), key, "alice", ttl)
			if err != nil {
				t.Logf("Acquire %d: %v", i, err)
				return
			}
			mu.Lock()
			grants = append(grants, g)
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	if len(grants) == 0 {
		t.Fatal("no Acquire succeeded")
	}
	tokens := map[uint64]bool{}
	live := 0
	for _, g := range grants {
		if tokens[g.Token] {
			t.Errorf("token %d given twice", g.Token)
		}
		tokens[g.Token] = true
		checkGrantLease(t, leases, g)
		if _, err := cs[0].Renew(ctx(t), g); err == nil {
			live++
			if l, ok, _ := cs[1].Leader(ctx(t), key); !ok || l.Token != g.Token {
				t.Errorf("grant %v renews, but etcd holds %v (%v)", g, l, ok)
			}
		} else if !errors.Is(err, tenure.ErrLost) {
			t.Errorf("Renew(%v) = %v; want renewed or ErrLost", g, err)
		}
	}
	if live > 1 {
		t.Errorf("%d of %d concurrent grants of one key renew; want at most one", live, len(grants))
	}
	t.Logf("%d grants, %d live", len(grants), live)
}

// TestSpareLeaseRevokedByHand: the lease kept ahead for bob is revoked by
// hand before he takes the key. His Acquire takes it on a new lease, never
// on the revoked one, and the grant renews.
func TestSpareLeaseRevokedByHand(t *testing.T) {
	t.Parallel()
	eps := startEtcd(t)
	leases := newLeaseLog()
	plain := newClient(t, eps)
	ca := newCoordinator(t, plain)
	cb := newCoordinator(t, hookedClient(t, eps, leases.hooks()))
	const key, ttl = "revoked/k", 4 * time.Second
	ga := mustAcquire(t, ca, key, "alice", ttl)
	before := time.Now()
	if _, err := cb.Acquire(ctx(t), key, "bob", ttl); !errors.Is(err, tenure.ErrHeld) {
		t.Fatalf("bob's Acquire of alice's key = %v; want ErrHeld", err)
	}
	spare := leaseGrantedAfter(t, leases, before)
	if _, err := plain.Revoke(ctx(t), spare); err != nil {
		t.Fatal(err)
	}
	if err := ca.Release(ctx(t), ga); err != nil {
		t.Fatal(err)
	}
	gb := mustAcquire(t, cb, key, "bob", ttl)
	if id, _ := leases.leaseOfToken(gb.Token); id == spare {
		t.Errorf("bob's grant %v is on lease %x, revoked by hand", gb, int64(spare))
	}
	checkGrantLease(t, leases, gb)
	if _, err := cb.Renew(ctx(t), gb); err != nil {
		t.Errorf("Renew(%v) = %v", gb, err)
	}
}

// leaseGrantedAfter returns the one lease whose grant was sent after since.
func leaseGrantedAfter(t *testing.T, leases *leaseLog, since time.Time) clientv3.LeaseID {
	t.Helper()
	leases.mu.Lock()
	defer leases.mu.Unlock()
	var ids []clientv3.LeaseID
	for id, e := range leases.ext {
		if e.sent.mono.After(since) {
			ids = append(ids, id)
		}
	}
	if len(ids) != 1 {
		t.Fatalf("leases granted since: %x; want one", ids)
	}
	return ids[0]
}

// TestLeaseExpiresBeforeThePut: bob's lease granted ahead expires at etcd
// while his Acquire's put is held back in the network. Whatever the put
// finds (a lease gone, or one expired but not yet revoked), the grant he
// gets reports no more lease than etcd gives it, and if it promises any,
// etcd holds the key with his token.
func TestLeaseExpiresBeforeThePut(t *testing.T) {
	t.Parallel()
	eps := startEtcd(t)
	leases := newLeaseLog()
	var hold atomic.Bool
	delay := rpcHooks{call: func(ctx context.Context, method string, _ any) error {
		if method == rpcTxn && hold.CompareAndSwap(true, false) {
			return sleepCtx(ctx, 2*time.Second) // the 1s lease expires, and is revoked within 0.5s
		}
		return nil
	}}
	ca := newCoordinator(t, newClient(t, eps))
	cb := newCoordinator(t, hookedClient(t, eps, leases.hooks(), delay))
	const key = "expiring/k"
	ga := mustAcquire(t, ca, key, "alice", time.Minute)
	before := time.Now()
	if _, err := cb.Acquire(ctx(t), key, "bob", time.Second); !errors.Is(err, tenure.ErrHeld) {
		t.Fatalf("bob's Acquire of alice's key = %v; want ErrHeld", err)
	}
	spare := leaseGrantedAfter(t, leases, before)
	if err := ca.Release(ctx(t), ga); err != nil {
		t.Fatal(err)
	}
	hold.Store(true)
	gb := mustAcquire(t, cb, key, "bob", time.Second)
	if hold.Load() {
		t.Fatal("bob's put was not held back")
	}
	checkGrantLease(t, leases, gb)
	id, _ := leases.leaseOfToken(gb.Token)
	t.Logf("bob's grant %v on lease %x (the one granted ahead: %v), %s left", gb, int64(id), id == spare, gb.Sent.Add(gb.TTL).Until())
	if gb.Sent.Add(gb.TTL).Until() > 0 {
		if l, ok, err := ca.Leader(ctx(t), key); err != nil || !ok || l.Token != gb.Token {
			t.Errorf("bob's grant %v promises %s more, but Leader() = %v, %v, %v", gb, gb.Sent.Add(gb.TTL).Until(), l, ok, err)
		}
	}
}

// sleepCtx waits for d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestGrantOnReusedLeaseIsNeverRevived: alice releases, and her next grant
// rides the same lease (kept by the Release). The first grant is never
// renewed through either coordinator, and releasing it through either
// leaves the second alone.
func TestGrantOnReusedLeaseIsNeverRevived(t *testing.T) {
	t.Parallel()
	eps := startEtcd(t)
	leases := newLeaseLog()
	c1 := newCoordinator(t, hookedClient(t, eps, leases.hooks()))
	c2 := newCoordinator(t, newClient(t, eps))
	const key, ttl = "reused/k", 4 * time.Second
	g1 := mustAcquire(t, c1, key, "alice", ttl)
	if err := c1.Release(ctx(t), g1); err != nil {
		t.Fatal(err)
	}
	g2 := mustAcquire(t, c1, key, "alice", ttl)
	l1, _ := leases.leaseOfToken(g1.Token)
	l2, _ := leases.leaseOfToken(g2.Token)
	if l1 != l2 {
		t.Fatalf("alice's grant after her Release is on lease %x, not %x kept by it: this test needs the reuse", int64(l2), int64(l1))
	}
	checkGrantLease(t, leases, g2)
	for _, c := range []*etcd.Coordinator{c1, c2} {
		wantLost(t, c, g1, "released, its lease now carrying the next grant")
		if err := c.Release(ctx(t), g1); err != nil {
			t.Errorf("Release(%v) again = %v", g1, err)
		}
	}
	if l, ok, err := c2.Leader(ctx(t), key); err != nil || !ok || l.Token != g2.Token {
		t.Errorf("Leader() = %v, %v, %v; want %v", l, ok, err, g2)
	}
	if _, err := c2.Renew(ctx(t), g2); err != nil {
		t.Errorf("Renew(%v) through another coordinator = %v", g2, err)
	}
}

// TestKeyChangedByHand: an operator deletes alice's key, or puts it again
// by hand (with her name, on her lease). Her grant is lost at her next
// renewal and never revived; her next grant has a greater token than any
// write before it.
func TestKeyChangedByHand(t *testing.T) {
	t.Parallel()
	eps := startEtcd(t)
	plain := newClient(t, eps)
	c := newCoordinator(t, plain)
	for i, tc := range []struct {
		name   string
		change func(t *testing.T, ek string, kv *clientv3.GetResponse)
	}{
		{"deleted", func(t *testing.T, ek string, _ *clientv3.GetResponse) {
			if _, err := plain.Delete(ctx(t), ek); err != nil {
				t.Fatal(err)
			}
		}},
		{"put again on its lease", func(t *testing.T, ek string, kv *clientv3.GetResponse) {
			lease := clientv3.WithLease(clientv3.LeaseID(kv.Kvs[0].Lease))
			if _, err := plain.Put(ctx(t), ek, string(kv.Kvs[0].Value), lease); err != nil {
				t.Fatal(err)
			}
		}},
		{"put again without a lease", func(t *testing.T, ek string, kv *clientv3.GetResponse) {
			if _, err := plain.Put(ctx(t), ek, string(kv.Kvs[0].Value)); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		key := fmt.Sprintf("byhand/%d", i)
		t.Run(tc.name, func(t *testing.T) {
			g := mustAcquire(t, c, key, "alice", 3*time.Second)
			kv, err := plain.Get(ctx(t), c.EtcdKey(key))
			if err != nil {
				t.Fatal(err)
			}
			tc.change(t, c.EtcdKey(key), kv)
			wantLost(t, c, g, "after its key was "+tc.name+" by hand")
			wantLost(t, c, g, "a second time")
			after, err := plain.Get(ctx(t), c.EtcdKey(key))
			if err != nil {
				t.Fatal(err)
			}
			if len(after.Kvs) > 0 && after.Kvs[0].Lease == 0 {
				// A key without a lease is no tenure grant: only an
				// operator can free it.
				if _, err := c.Acquire(ctx(t), key, "bob", 3*time.Second); !errors.Is(err, tenure.ErrHeld) {
					t.Errorf("bob's Acquire of a key put by hand = %v; want ErrHeld", err)
				}
				return
			}
			if err := c.Release(ctx(t), g); err != nil {
				t.Fatal(err)
			}
			next := mustAcquire(t, c, key, "alice", 3*time.Second)
			if next.Token <= uint64(after.Header.Revision) {
				t.Errorf("alice's next grant: token %d; want > %d, every write before it", next.Token, after.Header.Revision)
			}
		})
	}
}
