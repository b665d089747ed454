package etcd_test

import (
	"testing"
	"time"

	"github.com/tenure-dev/tenure/etcd"
	"github.com/tenure-dev/tenure/internal/boottime"
)

// TestAcquireOnSharedLeaseIsOneTxn checks that acquiring a key on a holder's
// shared lease that has plenty of time left is one transaction, with no
// keepalive after it, and that the TTL reported is no more than the lease
// has left at etcd, counted from when the request was sent.
func TestAcquireOnSharedLeaseIsOneTxn(t *testing.T) {
	eps := startCluster(t, 1).endpoints()
	cl, rc := countingClient(t, eps)
	c := newCoordinator(t, cl)
	g1 := mustAcquire(t, c, "onetxn/a", "alice", 10*time.Second)
	if !etcd.WaitLineReady(c) {
		t.Fatal("the coordinator does not follow the line of candidates")
	}
	rc.reset()
	sent := boottime.Now()
	g2 := mustAcquire(t, c, "onetxn/b", "alice", 10*time.Second)
	calls := rc.reset()
	delete(calls, "/etcdserverpb.Watch/Watch") // the line follower's stream may open late
	if len(calls) != 1 || calls["/etcdserverpb.KV/Txn"] != 1 {
		t.Errorf("Acquire on a shared lease made calls %v; want one Txn", calls)
	}
	if g2.TTL > g1.TTL || g2.TTL < g1.TTL/2 {
		t.Errorf("Acquire() TTL = %s; want in [%s, %s]", g2.TTL, g1.TTL/2, g1.TTL)
	}
	r, err := cl.TimeToLive(ctx(t), leaseOf(t, c, g2.Key))
	if err != nil {
		t.Fatal(err)
	}
	// etcd rounds the time left down to whole seconds.
	left := time.Duration(r.TTL+1)*time.Second + boottime.Since(sent)
	if g2.TTL > left {
		t.Errorf("Acquire() TTL = %s; the lease had at most %s left since the request was sent", g2.TTL, left)
	}
}

// TestAcquireExtendsSharedLeaseWithLittleLeft checks that a shared lease
// with less than half its TTL left is extended after the put, so that the
// new term gets the whole TTL, and that the key is on the extended lease.
func TestAcquireExtendsSharedLeaseWithLittleLeft(t *testing.T) {
	t.Parallel() // it waits for the lease to run down
	eps := startCluster(t, 1).endpoints()
	cl, rc := countingClient(t, eps)
	c := newCoordinator(t, cl)
	g1 := mustAcquire(t, c, "little/a", "alice", 2*time.Second)
	id := leaseOf(t, c, g1.Key)
	// Wait, without renewing, until etcd says less than half is left.
	for {
		r, err := cl.TimeToLive(ctx(t), id)
		if err != nil {
			t.Fatal(err)
		}
		if time.Duration(r.TTL)*time.Second < g1.TTL/2 {
			break
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		}
	}
	rc.reset()
	g2 := mustAcquire(t, c, "little/b", "alice", 2*time.Second)
	calls := rc.reset()
	if g2.TTL != g1.TTL {
		t.Errorf("Acquire() with little left TTL = %s; want the whole %s after a keepalive", g2.TTL, g1.TTL)
	}
	if calls["/etcdserverpb.Lease/LeaseKeepAlive"] != 1 {
		t.Errorf("Acquire() with little left made calls %v; want a keepalive", calls)
	}
	if l := leaseOf(t, c, g2.Key); l != id {
		t.Errorf("new key is on lease %x; want the shared lease %x", l, id)
	}
	r, err := cl.TimeToLive(ctx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	if time.Duration(r.TTL+1)*time.Second < g1.TTL/2 {
		t.Errorf("after Acquire() the lease has %ds left; want it extended", r.TTL)
	}
}
