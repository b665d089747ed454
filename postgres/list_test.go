package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
)

// TestList: the live grants under a prefix, sorted by key, with the time
// left on their leases; released and expired keys and keys outside the
// prefix are left out, and LIKE wildcards in the prefix match only
// themselves.
func TestList(t *testing.T) {
	t.Parallel()
	c := open(t, newDB(t))
	ctx := ctxFor(t, 30*time.Second)

	const ttl = 5 * time.Second
	grants := map[string]tenure.Grant{}
	for _, kh := range [][2]string{{"a/2", "h2"}, {"a/1", "h1"}, {"b/1", "h1"}, {"a/3", "h3"}, {"a_x", "h4"}} {
		g, err := c.Acquire(ctx, kh[0], kh[1], ttl)
		if err != nil {
			t.Fatal(err)
		}
		grants[kh[0]] = g
	}
	if err := c.Release(ctx, grants["a/3"]); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Acquire(ctx, "a/expired", "h5", 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)

	got, err := c.List(ctx, "a/")
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
		if g.TTL <= 0 || g.TTL > ttl {
			t.Errorf("List(a/) TTL of %s = %s; want the time left, in (0, %s]", g.Key, g.TTL, ttl)
		}
	}
	if got, err := c.List(ctx, "a_"); err != nil || len(got) != 1 || got[0].Key != "a_x" {
		t.Errorf("List(a_) = %v, %v; want a_x alone (_ is no wildcard)", got, err)
	}
	if all, err := c.List(ctx, ""); err != nil || len(all) != 4 {
		t.Errorf("List(\"\") = %v, %v; want the 4 live grants", all, err)
	}
	if _, err := c.List(ctx, "/a"); !errors.Is(err, tenure.ErrInvalidKey) {
		t.Errorf("List(/a) error = %v; want ErrInvalidKey", err)
	}
}
