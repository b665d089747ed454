package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/postgres"
)

// TestLeadershipTableNondeterministicCollation: a leadership table made
// beforehand (the seed's, or an administrator's) whose resource column, or
// the unique index on it, compares under a nondeterministic collation
// (ICU, case-insensitive) makes keys that differ in case one row: "jobs"
// and "Jobs" would be one key, so the holder of one is refused the other
// and Leader of one names the other's holder. Either Dial refuses the
// table (ErrTableShape), or the keys stay apart: each granted to its own
// holder beside the other, and Leader names each one's own.
func TestLeadershipTableNondeterministicCollation(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	pool := newPool(t, dsn)
	if _, err := pool.Exec(ctx, `CREATE COLLATION case_insensitive (provider = icu, locale = 'und-u-ks-level2', deterministic = false)`); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ table, ddl string }{
		{"column", `CREATE TABLE column_ci_leadership (
	resource      text COLLATE case_insensitive PRIMARY KEY,
	holder_id     text,
	fencing_token bigint NOT NULL DEFAULT 0,
	acquired_at   timestamptz,
	expires_at    timestamptz NOT NULL DEFAULT '-infinity')`},
		{"index", `CREATE TABLE index_ci_leadership (
	resource      text NOT NULL,
	holder_id     text,
	fencing_token bigint NOT NULL DEFAULT 0,
	acquired_at   timestamptz,
	expires_at    timestamptz NOT NULL DEFAULT '-infinity');
CREATE UNIQUE INDEX ON index_ci_leadership (resource COLLATE case_insensitive)`},
	} {
		t.Run(tc.table, func(t *testing.T) {
			table := tc.table + "_ci_leadership"
			if _, err := pool.Exec(ctx, tc.ddl); err != nil {
				t.Fatalf("%s: %v", tc.ddl, err)
			}
			c, err := postgres.Dial(ctx, dsn, postgres.WithTable(table))
			if errors.Is(err, postgres.ErrTableShape) {
				t.Logf("Dial() refused the table: %v", err)
				return
			}
			if err != nil {
				t.Fatalf("Dial() error = %v", err)
			}
			defer c.Close()
			lower, err := c.Acquire(ctx, "jobs", "a#1", time.Minute)
			if err != nil {
				t.Fatalf("Acquire(jobs) error = %v", err)
			}
			upper, err := c.Acquire(ctx, "Jobs", "b#1", time.Minute)
			if err != nil {
				t.Errorf("Acquire(Jobs) beside a live grant of jobs = %v; want a grant (another key), or Dial to refuse the table", err)
			}
			for key, want := range map[string]string{"jobs": lower.Holder, "Jobs": upper.Holder} {
				if g, held, err := c.Leader(ctx, key); err != nil || !held || g.Holder != want || g.Key != key {
					t.Errorf("Leader(%q) = %s, %v, %v; want held by %q", key, g, held, err, want)
				}
			}
		})
	}
}
