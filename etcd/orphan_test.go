package etcd_test

import (
	"context"
	"testing"
	"time"
)

// TestOrphanedKeyIsReleased: a holder leads two keys on one shared lease.
// Its elector for one key stops and its single release attempt fails. The
// holder's other elector keeps renewing, which keeps the shared lease, and
// so the orphaned key, alive. The coordinator must retry the release with
// the next renewal, so that another node can take the key.
func TestOrphanedKeyIsReleased(t *testing.T) {
	cl := newClient(t, startCluster(t, 1).endpoints())
	c := newCoordinator(t, cl)
	const ttl = 2 * time.Second
	a := mustAcquire(t, c, "orphan/a", "alice", ttl)
	b := mustAcquire(t, c, "orphan/b", "alice", ttl)

	failed, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Release(failed, a); err == nil {
		t.Fatal("Release() with a cancelled context = nil; the test needs it to fail")
	}
	// alice keeps renewing b for three TTLs.
	end := time.Now().Add(3 * ttl)
	for time.Now().Before(end) {
		if _, err := c.Renew(ctx(t), b); err != nil {
			t.Fatalf("Renew(%v) = %v", b, err)
		}
		time.Sleep(ttl / 4)
	}
	other := newCoordinator(t, cl)
	g, err := other.Acquire(ctx(t), a.Key, "bob", ttl)
	if err != nil {
		t.Fatalf("bob's Acquire(%q) three TTLs after alice's release failed = %v; want granted (the orphaned key released with alice's next renewal)", a.Key, err)
	}
	if g.Token <= a.Token {
		t.Fatalf("bob's token %d; want greater than alice's %d", g.Token, a.Token)
	}
	if l, ok, err := c.Leader(ctx(t), b.Key); err != nil || !ok || l.Token != b.Token {
		t.Fatalf("Leader(%q) = %v, %v, %v; want alice's grant, untouched", b.Key, l, ok, err)
	}
}
