// A members table made beforehand by the coordinator's own role whose
// expires_at is timestamptz(0) would round each membership's end to the
// nearest second, up to half a second early, and the next claim would
// delete the membership and take its partitions while the member still
// acts (its local deadline, with Margin timing.MinMargin, is later): two
// owners. Such group tables are refused (ErrTableShape), as a leadership
// table with such an expires_at is.

package postgres_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/timing"
	"github.com/tenure-dev/tenure/postgres"
)

// TestGroupTablesExpiryPrecision: group tables made beforehand with a
// members table whose expires_at is timestamptz(0) are refused
// (ErrTableShape naming the column); were they not, no claim may take a
// member's partition before its local deadline with the smallest margin
// allowed.
func TestGroupTablesExpiryPrecision(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	pool := newPool(t, dsn)
	ctx := ctxFor(t, time.Minute)
	if _, err := pool.Exec(ctx, `CREATE TABLE cluster_leadership_members (
	epoch bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, grp text NOT NULL, member text NOT NULL,
	ttl_us bigint NOT NULL, expires_at timestamptz(0) NOT NULL, partitions integer);
CREATE TABLE cluster_leadership_partitions (grp text NOT NULL, name text NOT NULL, owner_epoch bigint,
	fencing_token bigint NOT NULL, PRIMARY KEY (grp, name))`); err != nil {
		t.Fatal(err)
	}
	c := open(t, dsn)
	b, err := c.JoinGroup(ctx, "jobs", "b", time.Minute, 0)
	if err != nil {
		if !errors.Is(err, postgres.ErrTableShape) || !strings.Contains(err.Error(), "expires_at") {
			t.Fatalf("JoinGroup() beside a members table with expires_at timestamptz(0) = %v; want ErrTableShape naming expires_at", err)
		}
		return
	}
	// A membership is rounded down when it starts in the first half of a
	// second (the server's clock is this machine's).
	now := time.Now()
	time.Sleep(now.Truncate(time.Second).Add(time.Second + 350*time.Millisecond).Sub(now))
	const ttl = time.Second
	a, err := c.JoinGroup(ctx, "jobs", "a", ttl, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := c.ClaimPartitions(ctx, a, []string{"0"}); err != nil || res[0].Err != nil {
		t.Fatalf("a's ClaimPartitions(0) = %v, %v", res, err)
	}
	deadline := a.Sent.Add(ttl - timing.MinMargin) // MaxDrift 0: the latest deadline
	for deadline.Until() > 0 {
		res, err := c.ClaimPartitions(ctx, b, []string{"0"})
		if err == nil && res[0].Err == nil {
			if left := deadline.Until(); left > 0 {
				t.Fatalf("b's ClaimPartitions(0) = %v, %v before a's local deadline (Margin %s) for %s: two owners", res[0].Grant, left, timing.MinMargin, a)
			}
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}
