package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
)

// TestForeignRows: live rows tenure did not write as they stand (no
// holder_id, an expires_at of infinity) do not break List, Leader or
// Acquire: List leaves out the row without a holder, Leader reads both as
// held, Acquire
// refuses them, and ListForeign lists them. RemoveForeign ends a row's
// lease only as it was read, keeping its token, so the next grant's token
// is greater even when the planted token is above the clock in µs.
func TestForeignRows(t *testing.T) {
	t.Parallel()
	c := open(t, newDB(t))
	ctx := ctxFor(t, 30*time.Second)
	if _, err := c.Pool().Exec(ctx, `INSERT INTO `+c.Table()+` (resource, holder_id, fencing_token, expires_at) VALUES
	('f/null', NULL, 7, now() + interval '1 hour'),
	('f/infinity', 'mallory', 9000000000000000, 'infinity')`); err != nil {
		t.Fatal(err)
	}
	if gs, err := c.List(ctx, "f/"); err != nil || len(gs) != 1 || gs[0].Key != "f/infinity" {
		t.Fatalf("List(f/) = %v, %v; want f/infinity, the one with a holder", gs, err)
	}
	for _, key := range []string{"f/null", "f/infinity"} {
		if _, held, err := c.Leader(ctx, key); err != nil || !held {
			t.Errorf("Leader(%s) = held %v, %v; want held", key, held, err)
		}
		if _, err := c.Acquire(ctx, key, "h1", time.Second); !errors.Is(err, tenure.ErrHeld) {
			t.Errorf("Acquire(%s) error = %v; want ErrHeld", key, err)
		}
	}
	rs, err := c.ListForeign(ctx, "f/")
	if err != nil || len(rs) != 2 || rs[0].Key != "f/infinity" || rs[0].TTL >= 0 || rs[0].Malformed ||
		rs[1].Key != "f/null" || !rs[1].Malformed || rs[1].TTL <= 0 {
		t.Fatalf("ListForeign(f/) = %+v, %v; want f/infinity (foreign, never ends) and f/null (malformed)", rs, err)
	}
	for _, r := range rs {
		stale := r
		stale.Token++
		if ok, err := c.RemoveForeign(ctx, stale); ok || err != nil {
			t.Errorf("RemoveForeign(%+v) = %v, %v; want false, nil: another token", stale, ok, err)
		}
		if ok, err := c.RemoveForeign(ctx, r); !ok || err != nil {
			t.Fatalf("RemoveForeign(%+v) = %v, %v; want true, nil", r, ok, err)
		}
		g, err := c.Acquire(ctx, r.Key, "h1", time.Second)
		if err != nil || g.Token <= r.Token {
			t.Errorf("Acquire(%s) after RemoveForeign = %v, %v; want a token above %d", r.Key, g, err, r.Token)
		}
	}
}
