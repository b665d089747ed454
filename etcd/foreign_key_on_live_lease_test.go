package etcd_test

import (
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
)

// TestKeyPutByHandOnALiveLease: a key put by hand on the lease of a live
// group member, with a holder identity as its value, is refused to
// everyone for as long as that member renews; ListForeign lists it, so
// RemoveForeign can free it. Acquire never puts a grant's key on a lease
// that carries anything else (each grant rides a lease of its own), and a
// member's partition keys hold its own ID, so such a key is no grant and
// no partition that tenure wrote (see strangerOn). Two shapes of it:
//
//   - "g/0", a partition of the member's own group, holding another ID:
//     GroupPartitions leaves it out (it is not the member's), so the
//     partition is assigned, and every member's claim of it is refused
//     (a stranger: the runner waits for it to end).
//   - "k", a single key: every Acquire of k is refused.
//
// And the same for a key "k2" put by hand on the lease of a grant of "k1",
// for as long as k1's holder renews.
//
// Red when foreignOf judged a key by its lease's TTL and its value alone:
//
//	partition g/0: ClaimPartitions(bob) = HeldError by "ghost#1", and ListForeign(g) lists nothing of it
//	single key k: Acquire(k) = HeldError by "ghost#1", and ListForeign(k) lists nothing of it
//	key k2 on a grant's lease: Acquire(k2) = HeldError by "ghost#2", and ListForeign(k2) lists nothing of it
//
// Its neighbours and controls are in
// foreign_key_on_live_lease_neighbours_test.go.
func TestKeyPutByHandOnALiveLease(t *testing.T) {
	t.Parallel()
	client := newClient(t, startEtcd(t))
	c := newCoordinator(t, client)
	alice, err := c.JoinGroup(ctx(t), "g", "alice#1", time.Minute, 2)
	if err != nil {
		t.Fatal(err)
	}
	bob, err := c.JoinGroup(ctx(t), "g", "bob#1", time.Minute, 2)
	if err != nil {
		t.Fatal(err)
	}
	on := clientv3.WithLease(clientv3.LeaseID(alice.Epoch))
	for _, key := range []string{"g/0", "k"} {
		if _, err := client.Put(ctx(t), c.EtcdKey(key), "ghost#1", on); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.RenewMember(ctx(t), alice); err != nil {
		t.Fatalf("RenewMember(alice) = %v; alice renews its lease, and the keys on it", err)
	}
	listed := func(prefix, key string) bool {
		rs, err := c.ListForeign(ctx(t), prefix)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if r.Key == key && r.Member == "" {
				return true
			}
		}
		return false
	}
	res, err := c.ClaimPartitions(ctx(t), bob, []string{"0"})
	if err != nil {
		t.Fatal(err)
	}
	var he *tenure.HeldError
	if errors.As(res[0].Err, &he) && !listed("g", "g/0") {
		t.Errorf("partition g/0: ClaimPartitions(bob) = HeldError by %q, and ListForeign(g) lists nothing of it", he.Holder)
	}
	if _, err := c.Acquire(ctx(t), "k", "carol", time.Minute); errors.As(err, &he) && !listed("k", "k") {
		t.Errorf("single key k: Acquire(k) = HeldError by %q, and ListForeign(k) lists nothing of it", he.Holder)
	}
	// The same on a grant's lease: "k2" put by hand on the lease of dave's
	// grant of "k1", which dave's Renew keeps alive.
	g1 := mustAcquire(t, c, "k1", "dave", time.Minute)
	kv, err := client.Get(ctx(t), c.EtcdKey("k1"))
	if err != nil || len(kv.Kvs) != 1 {
		t.Fatalf("Get(k1) = %v, %v", kv, err)
	}
	if _, err := client.Put(ctx(t), c.EtcdKey("k2"), "ghost#2", clientv3.WithLease(clientv3.LeaseID(kv.Kvs[0].Lease))); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Renew(ctx(t), g1); err != nil {
		t.Fatalf("Renew(%s) = %v; dave renews its lease, and k2 with it", g1, err)
	}
	if _, err := c.Acquire(ctx(t), "k2", "carol", time.Minute); errors.As(err, &he) && !listed("k2", "k2") {
		t.Errorf("key k2 on a grant's lease: Acquire(k2) = HeldError by %q, and ListForeign(k2) lists nothing of it", he.Holder)
	}
}
