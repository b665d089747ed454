package etcd_test

import (
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestRemoveForeignAfterRegrant: a foreign key read by ListForeign that is
// then deleted and granted by Acquire before RemoveForeign runs is not
// removed: RemoveForeign reports false and the grant stays live, with a
// token above the foreign record's.
func TestRemoveForeignAfterRegrant(t *testing.T) {
	t.Parallel()
	client := newClient(t, startEtcd(t))
	c := newCoordinator(t, client)
	long, err := client.Grant(ctx(t), 200000)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"r/a", "r/ab"} {
		if _, err := client.Put(ctx(t), c.EtcdKey(k), "mallory", clientv3.WithLease(long.ID)); err != nil {
			t.Fatal(err)
		}
	}
	rs, err := c.ListForeign(ctx(t), "r/a")
	if err != nil || len(rs) != 2 || rs[0].Key != "r/a" || rs[1].Key != "r/ab" {
		t.Fatalf("ListForeign(r/a) = %+v, %v; want r/a and r/ab", rs, err)
	}
	if _, err := client.Delete(ctx(t), c.EtcdKey("r/a")); err != nil {
		t.Fatal(err)
	}
	g, err := c.Acquire(ctx(t), "r/a", "h1", 5*time.Second)
	if err != nil || g.Token <= rs[0].Token {
		t.Fatalf("Acquire(r/a) = %v, %v; want a token above %d", g, err, rs[0].Token)
	}
	if ok, err := c.RemoveForeign(ctx(t), rs[0]); ok || err != nil {
		t.Fatalf("RemoveForeign(%+v) over a live grant = %v, %v; want false, nil", rs[0], ok, err)
	}
	if l, held, err := c.Leader(ctx(t), "r/a"); err != nil || !held || l.Token != g.Token {
		t.Fatalf("Leader(r/a) = %v, held %v, %v; want the grant %v", l, held, err, g)
	}
	if ok, err := c.RemoveForeign(ctx(t), rs[1]); !ok || err != nil {
		t.Fatalf("RemoveForeign(%+v) = %v, %v; want true, nil", rs[1], ok, err)
	}
	if err := c.Release(ctx(t), g); err != nil {
		t.Fatal(err)
	}
}
