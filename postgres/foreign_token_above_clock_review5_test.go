//go:build openfinding

package postgres_test

import (
	"testing"
	"time"
)

// TestTokenAfterForeignRowAboveTheClockAndADeletedRow: a foreign row of key
// k/high (holder mallory, an expires_at of infinity) carries a token above
// the database clock in µs, 2^62. RemoveForeign frees it, and h1's grant
// gets 2^62+1, which a resource then sees. The key's row is then deleted
// "to unstick" it, which docs/postgresql.md says never hands out a token a
// resource has already seen. The next grant's token must be above h1's.
func TestTokenAfterForeignRowAboveTheClockAndADeletedRow(t *testing.T) {
	t.Parallel()
	c := open(t, newDB(t))
	ctx := ctxFor(t, 30*time.Second)
	const high = int64(1) << 62
	if _, err := c.Pool().Exec(ctx, `INSERT INTO `+c.Table()+` (resource, holder_id, fencing_token, expires_at) VALUES ('k/high', 'mallory', $1, 'infinity')`, high); err != nil {
		t.Fatal(err)
	}
	rs, err := c.ListForeign(ctx, "k/")
	if err != nil || len(rs) != 1 {
		t.Fatalf("ListForeign(k/) = %+v, %v; want the row of k/high", rs, err)
	}
	if ok, err := c.RemoveForeign(ctx, rs[0]); !ok || err != nil {
		t.Fatalf("RemoveForeign = %v, %v", ok, err)
	}
	g1, err := c.Acquire(ctx, "k/high", "h1", time.Second)
	if err != nil || g1.Token <= uint64(high) {
		t.Fatalf("Acquire(k/high, h1) = %v, %v; want a token above %d", g1, err, high)
	}
	if err := c.Release(ctx, g1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pool().Exec(ctx, `DELETE FROM `+c.Table()+` WHERE resource = 'k/high'`); err != nil {
		t.Fatal(err)
	}
	g2, err := c.Acquire(ctx, "k/high", "h2", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if g2.Token <= g1.Token {
		t.Errorf("Acquire(k/high, h2) after the row was deleted = token %d; want above h1's %d, which a resource has seen: the token went back", g2.Token, g1.Token)
	}
}
