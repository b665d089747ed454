package memory_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/memory"
)

// TestList: List returns the live grants under a prefix, sorted by key,
// with the time left on each lease as TTL; a released or expired key is
// not listed, a malformed prefix is rejected, and a closed coordinator
// fails with ErrClosed.
func TestList(t *testing.T) {
	ctx := context.Background()
	c := memory.New()
	defer c.Close()
	for _, k := range []string{"a/2", "b/1", "a/1", "a/3"} {
		if _, err := c.Acquire(ctx, k, "x#1", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	g3, _, err := c.Leader(ctx, "a/3")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Release(ctx, g3); err != nil {
		t.Fatal(err)
	}
	gs, err := c.List(ctx, "a/")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, g := range gs {
		keys = append(keys, g.Key)
		if g.TTL <= 0 || g.TTL > time.Minute || g.Holder != "x#1" || g.Token == 0 {
			t.Errorf("List(a/) lists %v; want holder x#1, a token, and a TTL in (0, 1m]", g)
		}
	}
	if want := []string{"a/1", "a/2"}; !slices.Equal(keys, want) {
		t.Errorf("List(a/) keys = %q; want %q", keys, want)
	}
	c.JumpClock(2 * time.Minute)
	if gs, err := c.List(ctx, ""); err != nil || len(gs) != 0 {
		t.Errorf("List() after every lease expired = %v, %v; want nothing", gs, err)
	}
	if _, err := c.List(ctx, "/a"); !errors.Is(err, tenure.ErrInvalidKey) {
		t.Errorf("List(/a) error = %v; want ErrInvalidKey", err)
	}
	_ = c.Close()
	if _, err := c.List(ctx, ""); !errors.Is(err, tenure.ErrClosed) {
		t.Errorf("List() after Close error = %v; want ErrClosed", err)
	}
}
