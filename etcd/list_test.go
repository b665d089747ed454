package etcd_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
)

// TestList: the live grants under a prefix, sorted by key, with the time
// left on their leases; released keys, keys outside the prefix and etcd
// keys that are not tenure keys are left out.
func TestList(t *testing.T) {
	t.Parallel()
	client := newClient(t, startEtcd(t))
	c := newCoordinator(t, client)

	const ttl = 5 * time.Second
	grants := map[string]tenure.Grant{}
	for _, kh := range [][2]string{{"a/2", "h2"}, {"a/1", "h1"}, {"b/1", "h1"}, {"a/3", "h3"}} {
		g, err := c.Acquire(ctx(t), kh[0], kh[1], ttl)
		if err != nil {
			t.Fatal(err)
		}
		grants[kh[0]] = g
	}
	if err := c.Release(ctx(t), grants["a/3"]); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Put(ctx(t), c.EtcdKey("a/not a key"), "x"); err != nil {
		t.Fatal(err)
	}

	got, err := c.List(ctx(t), "a/")
	if err != nil {
		t.Fatalf("List(a/) error = %v", err)
	}
	if len(got) != 2 || got[0].Key != "a/1" || got[1].Key != "a/2" {
		t.Fatalf("List(a/) = %v; want a/1 and a/2, in order", got)
	}
	for _, g := range got {
		want := grants[g.Key]
		if g.Holder != want.Holder || g.Token != want.Token {
			t.Errorf("List(a/) has %v; want holder %q token %d", g, want.Holder, want.Token)
		}
		if g.TTL < ttl-2*time.Second || g.TTL > ttl {
			t.Errorf("List(a/) TTL of %s = %s; want the time left, in (%s, %s]", g.Key, g.TTL, ttl-2*time.Second, ttl)
		}
	}
	if all, err := c.List(ctx(t), ""); err != nil || len(all) != 3 {
		t.Errorf("List(\"\") = %v, %v; want the 3 live grants", all, err)
	}
	if none, err := c.List(ctx(t), "c/"); err != nil || len(none) != 0 {
		t.Errorf("List(c/) = %v, %v; want none", none, err)
	}
	if _, err := c.List(ctx(t), "/a"); !errors.Is(err, tenure.ErrInvalidKey) {
		t.Errorf("List(/a) error = %v; want ErrInvalidKey", err)
	}
}
