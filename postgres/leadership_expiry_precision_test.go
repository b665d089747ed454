package postgres_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/timing"
)

// TestLeadershipTableExpiryPrecision: a leadership table made beforehand
// whose expires_at is timestamptz(0), which stores whole seconds, rounding
// to the nearest: a lease of one second from 10.4 s ends at 11 s on the
// database, 0.4 s early. A holder, whose local deadline is its request's
// send time + TTL·(1 − MaxDrift) − Margin with a Margin of at least
// timing.MinMargin (50 ms), then still acts when the next holder is
// granted the key: two holders. Dial must refuse such a column
// (ErrTableShape), or no second holder may be granted the key before the
// first's local deadline with the smallest margin and drift allowed.
// (The test's clock reads are on the safe side: a's deadline is counted
// from before its request, and b's grant seen after its reply.)
func TestLeadershipTableExpiryPrecision(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	ctx := ctxFor(t, 2*time.Minute)
	a, b, ok := dialTableMadeBeforehand(ctx, t, dsn, "seconds", `CREATE TABLE seconds (resource text PRIMARY KEY, holder_id text,
	fencing_token bigint NOT NULL DEFAULT 0, acquired_at timestamptz(0), expires_at timestamptz(0) NOT NULL DEFAULT '-infinity')`)
	if !ok {
		return
	}
	const ttl = time.Second
	// A lease is rounded down when it starts in the first half of a second
	// (the server's clock is this machine's): start each at 0.35 s past
	// one.
	for i := range 8 {
		key := fmt.Sprintf("jobs-%d", i)
		now := time.Now()
		time.Sleep(now.Truncate(time.Second).Add(time.Second + 350*time.Millisecond).Sub(now))
		ga, err := a.Acquire(ctx, key, "a", ttl)
		if err != nil {
			t.Fatalf("a.Acquire(%s) = %v", key, err)
		}
		deadline := ga.Sent.Add(time.Duration(float64(ttl)*(1-0)) - timing.MinMargin) // MaxDrift 0: the latest deadline
		for deadline.Until() > 0 {
			if gb, err := b.Acquire(ctx, key, "b", ttl); err == nil {
				if left := deadline.Until(); left > 0 {
					t.Fatalf("b.Acquire(%s) = %v, %v before a's local deadline (Margin %s) for %v: two holders", key, gb, left, timing.MinMargin, ga)
				}
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	t.Errorf("Dial() accepted expires_at timestamptz(0) (no early grant seen in 8 tries)")
}
