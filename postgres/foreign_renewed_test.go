package postgres_test

import (
	"testing"
	"time"
)

// TestRemoveForeignAfterRenew: a grant whose expires_at was pushed out by
// hand past a day is listed as foreign; once its holder renews it, it is a
// tenure grant again as it stands, and RemoveForeign of the record read
// before leaves it live.
func TestRemoveForeignAfterRenew(t *testing.T) {
	t.Parallel()
	c := open(t, newDB(t))
	ctx := ctxFor(t, 30*time.Second)
	g, err := c.Acquire(ctx, "p/pinned", "h1", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pool().Exec(ctx, `UPDATE `+c.Table()+` SET expires_at = 'infinity' WHERE resource = 'p/pinned'`); err != nil {
		t.Fatal(err)
	}
	rs, err := c.ListForeign(ctx, "p/")
	if err != nil || len(rs) != 1 || rs[0].Token != g.Token {
		t.Fatalf("ListForeign(p/) = %+v, %v; want p/pinned at token %d", rs, err, g.Token)
	}
	if _, err := c.Renew(ctx, g); err != nil {
		t.Fatalf("Renew(%v) = %v", g, err)
	}
	if ok, err := c.RemoveForeign(ctx, rs[0]); ok || err != nil {
		t.Errorf("RemoveForeign(%+v) after the holder renewed = %v, %v; want false, nil: the row is a live grant again", rs[0], ok, err)
	}
	if l, held, err := c.Leader(ctx, "p/pinned"); err != nil || !held || l.Token != g.Token {
		t.Errorf("Leader(p/pinned) = %v, held %v, %v; want the renewed grant %v", l, held, err, g)
	}
}
