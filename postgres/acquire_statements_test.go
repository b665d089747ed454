package postgres_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// statementCounter counts the statements a pool sends (BEGIN, COMMIT and
// SAVEPOINT included).
type statementCounter struct{ n atomic.Int64 }

func (s *statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	s.n.Add(1)
	return ctx
}

func (s *statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TestAcquireStatements: the check that keeps a single key off a live
// partition costs a key that cannot name a partition nothing: one
// statement per Acquire, Renew and Release, with or without group tables
// in the database. A key that can ("g/n") pays at most one statement more
// for it: one while no group tables exist, two (the look at the tables,
// then the partition's row) while they do, since the tables can be
// replaced by another role's at any time (TestGroupTablesReplacedUnderACoordinator).
func TestAcquireStatements(t *testing.T) {
	t.Parallel()
	var count statementCounter
	c := openTraced(t, newDB(t), &count)
	ctx := ctxFor(t, time.Minute)
	cycle := func(key string) (acquire, renew, release int64) {
		t.Helper()
		before := count.n.Load()
		g, err := c.Acquire(ctx, key, "a", time.Minute)
		if err != nil {
			t.Fatalf("Acquire(%q) = %v", key, err)
		}
		acquire = count.n.Load() - before
		if _, err := c.Renew(ctx, g); err != nil {
			t.Fatalf("Renew() = %v", err)
		}
		renew = count.n.Load() - before - acquire
		if err := c.Release(ctx, g); err != nil {
			t.Fatalf("Release() = %v", err)
		}
		return acquire, renew, count.n.Load() - before - acquire - renew
	}
	check := func(what, key string, want int64) {
		t.Helper()
		cycle(key) // the first acquisition inserts the key's row
		a, r, l := cycle(key)
		t.Logf("%s: Acquire %d, Renew %d, Release %d statements", what, a, r, l)
		if a > want || r != 1 || l != 1 {
			t.Errorf("%s (%q): Acquire, Renew, Release took %d, %d, %d statements; want at most %d, 1, 1", what, key, a, r, l, want)
		}
	}
	check("a key without '/'", "plain", 1)
	check("a partition-like key, no group tables", "bench/0", 1)
	m, err := c.JoinGroup(ctx, "jobs", "m", time.Minute, 0) // makes the group tables
	if err != nil {
		t.Fatal(err)
	}
	check("a key without '/', group tables", "plain", 1)
	check("a partition-like key, group tables", "bench/0", 2)
	if _, err := c.ClaimPartitions(ctx, m, []string{"1"}); err != nil {
		t.Fatal(err)
	}
	check("a partition-like key of a live group, not claimed", "jobs/0", 2)
}
