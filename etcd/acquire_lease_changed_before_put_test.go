// Acquire on a fresh lease that another program changed between Acquire's
// LeaseGrant and its transaction, while it carried nothing (no record is
// removed): any etcd client may revoke an empty lease and grant its ID
// again (etcd's LeaseGrant takes an ID), or put a key on it (`etcdctl lease
// list` names every lease, and lease IDs are handed out in sequence; with
// auth on, a user whose role reads and writes /tenure/leader/ alone listed
// and revoked another user's empty lease, etcd 3.4.23). Acquire looks every
// lease up once its key is on it (checkLease), as it did a spare's alone.
//
// Red before, Debian etcd 3.4.23 (minimum TTL 2s):
//
//	Acquire(k, o#1) granted k@4 by "o#1" (ttl 30s), 3.5s before h's grant k@2 by "h#1" (ttl 6s) ends (h.Sent + TTL): two holders of k at once
//	ListForeign() lists h's live grant k@3 by "h#1" (ttl 30s) as foreign: {Key:k … Reason:a key put on a lease that carried "stray" before it}
//	RemoveForeign({Key:k …}) = true, <nil>; want nothing removed: h renews the grant
//	Acquire(k, o#1) = k@5 by "o#1" (ttl 30s) while h renews its grant k@3 by "h#1" (ttl 30s): two holders of k at once

package etcd_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestAcquireOnALeaseRegrantedBeforeItsPut: h's Acquire of k for 6s meets
// another program that revokes the lease Acquire has just granted and
// grants its ID again for 1s (etcd raises it to its minimum) before
// Acquire's transaction puts k on it. No holder may be granted k before
// h's grant ends: h.Sent + h.TTL.
func TestAcquireOnALeaseRegrantedBeforeItsPut(t *testing.T) {
	t.Parallel()
	eps := startEtcd(t)
	plain := newClient(t, eps)
	other := newCoordinator(t, plain)
	ek := other.EtcdKey("k")
	var armed atomic.Bool
	h := newCoordinator(t, hookedClient(t, eps, regrantBeforePut(t, plain, &armed, 1, func(req any) (clientv3.LeaseID, bool) {
		return txnPutLease(req, ek)
	})))
	armed.Store(true)
	g, err := h.Acquire(ctx(t), "k", "h#1", 6*time.Second)
	if armed.Load() {
		t.Fatalf("Acquire(k, h#1) = %v, %v; the lease was never granted again: no transaction put k", g, err)
	}
	if err != nil {
		t.Logf("Acquire(k, h#1) on a lease granted again = %v", err)
		return
	}
	ends := g.Sent.Add(g.TTL)
	for ends.Until() > 0 {
		if o, err := other.Acquire(ctx(t), "k", "o#1", 30*time.Second); err == nil {
			t.Fatalf("Acquire(k, o#1) granted %s, %s before h's grant %s ends (h.Sent + TTL): two holders of k at once", o, ends.Until().Round(100*time.Millisecond), g)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestAcquireOnALeaseCarryingAForeignKey: as
// TestSpareLeaseCarryingAForeignKey, on the fresh lease of h's Acquire:
// between its LeaseGrant and its transaction, another program puts a key
// of its own on that lease (the one lease in `etcdctl lease list` that
// carries nothing). h's grant is live: it must not be listed or removed
// as foreign, and no other holder may be granted k while h renews it.
func TestAcquireOnALeaseCarryingAForeignKey(t *testing.T) {
	t.Parallel()
	eps := startEtcd(t)
	plain := newClient(t, eps)
	other := newCoordinator(t, plain)
	ek := other.EtcdKey("k")
	var armed atomic.Bool
	h := newCoordinator(t, hookedClient(t, eps, rpcHooks{call: func(ctx context.Context, method string, req any) error {
		l, ok := txnPutLease(req, ek)
		if method != rpcTxn || !ok || !armed.CompareAndSwap(true, false) {
			return nil
		}
		if _, err := plain.Put(ctx, other.EtcdKey("stray"), "mallory", clientv3.WithLease(l)); err != nil {
			t.Errorf("put a key on lease %x before Acquire's put: %v", int64(l), err)
		}
		return nil
	}}))
	armed.Store(true)
	g, err := h.Acquire(ctx(t), "k", "h#1", 30*time.Second)
	if err != nil {
		t.Fatalf("Acquire(k, h#1) = %v", err)
	}
	if armed.Load() {
		t.Fatalf("Acquire(k, h#1) = %s; no transaction put k", g)
	}
	liveGrantStaysH(t, h, other, g, "o#1")
}
