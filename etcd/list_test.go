package etcd_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
)

func TestList(t *testing.T) {
	cl := newClient(t, startCluster(t, 1).endpoints())
	c := newCoordinator(t, cl)
	g1 := mustAcquire(t, c, "orders/1", "alice", 10*time.Second)
	g2 := mustAcquire(t, c, "orders/2", "bob", 20*time.Second)
	g3 := mustAcquire(t, c, "ordersx", "alice", 10*time.Second)
	g4 := mustAcquire(t, c, "reports", "carol", 10*time.Second)
	// Not a tenure key, though under the prefix: left out.
	if _, err := cl.Put(ctx(t), c.EtcdKey("orders//odd"), "x"); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		prefix string
		want   []tenure.Grant
	}{
		{"orders/", []tenure.Grant{g1, g2}},
		{"orders", []tenure.Grant{g1, g2, g3}},
		{"", []tenure.Grant{g1, g2, g3, g4}},
		{"nothing", nil},
	} {
		gs, err := c.List(ctx(t), tc.prefix)
		if err != nil {
			t.Fatalf("List(%q) = %v", tc.prefix, err)
		}
		if len(gs) != len(tc.want) {
			t.Fatalf("List(%q) = %v; want %v", tc.prefix, gs, tc.want)
		}
		for i, g := range gs {
			w := tc.want[i]
			if g.Key != w.Key || g.Holder != w.Holder || g.Token != w.Token {
				t.Errorf("List(%q)[%d] = %v; want %v", tc.prefix, i, g, w)
			}
			if g.TTL < w.TTL-5*time.Second || g.TTL > w.TTL {
				t.Errorf("List(%q)[%d] time left = %s; want a little under %s", tc.prefix, i, g.TTL, w.TTL)
			}
		}
	}
	if _, err := c.List(ctx(t), "/abs"); !errors.Is(err, tenure.ErrInvalidKey) {
		t.Errorf("List(/abs) = %v; want ErrInvalidKey", err)
	}

	// Released and expired grants are not listed.
	if err := c.Release(ctx(t), g4); err != nil {
		t.Fatal(err)
	}
	short := mustAcquire(t, c, "short", "dave", time.Second)
	waitFree(t, c, short.Key, time.Now().Add(short.TTL+5*time.Second))
	gs, err := c.List(ctx(t), "")
	if err != nil || len(gs) != 3 {
		t.Errorf("List after a release and an expiry = %v, %v; want the 3 live grants", gs, err)
	}
}
