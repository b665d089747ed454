package postgres_test

import (
	"testing"
	"time"
)

// TestLeadershipTableWithTwoRowsForAKeyRefused: a leadership table made
// beforehand where a key can have two rows, though its resource column
// looks unique to a look at its indexes: the unique index is invalid (a
// CREATE UNIQUE INDEX CONCURRENTLY that failed on rows already
// duplicated; PostgreSQL keeps it, marked invalid, and does not enforce
// it), or the table has a child table (INHERITS), whose rows every
// statement on the parent reads and writes too, with uniqueness enforced
// per table. Each key's two rows carry different tokens, so a grant
// writes both and a release ends only the one of its token: the next
// holder is granted the key on that row, while the other row is still the
// first holder's, which is granted the key again at once: two holders.
// Dial must refuse such a table (ErrTableShape).
func TestLeadershipTableWithTwoRowsForAKeyRefused(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	const columns = `(resource text, holder_id text, fencing_token bigint NOT NULL DEFAULT 0,
	acquired_at timestamptz, expires_at timestamptz NOT NULL DEFAULT '-infinity')`
	// The second row's token is above the clock in µs, so the grant gives
	// the two rows different tokens.
	const rows = `(resource, fencing_token) VALUES ('jobs', 0), ('jobs', 5000000000000000)`
	for _, tc := range []struct {
		name  string
		setup []string
	}{
		{"invalid unique index", []string{
			`CREATE TABLE invalid_index ` + columns,
			`INSERT INTO invalid_index ` + rows,
			`CREATE UNIQUE INDEX CONCURRENTLY invalid_index_resource ON invalid_index (resource)`, // fails, leaves the index
		}},
		{"inheriting table", []string{
			`CREATE TABLE inherited ` + columns,
			`ALTER TABLE inherited ADD PRIMARY KEY (resource)`,
			`CREATE TABLE inherited_child () INHERITS (inherited)`,
			`ALTER TABLE inherited_child ADD PRIMARY KEY (resource)`,
			`INSERT INTO inherited (resource, fencing_token) VALUES ('jobs', 0)`,
			`INSERT INTO inherited_child (resource, fencing_token) VALUES ('jobs', 5000000000000000)`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table := map[string]string{"invalid unique index": "invalid_index", "inheriting table": "inherited"}[tc.name]
			for _, s := range tc.setup {
				if err := execAllowFail(t, dsn, s); err != nil {
					t.Logf("%s: %v", s, err)
				}
			}
			ctx := ctxFor(t, time.Minute)
			var uniques int
			if err := newPool(t, dsn).QueryRow(ctx, `SELECT count(*) FROM pg_index WHERE indrelid = $1::regclass AND indisunique`, table).Scan(&uniques); err != nil || uniques == 0 {
				t.Fatalf("unique indexes on %s: %d, %v; want one (the test's premise)", table, uniques, err)
			}
			a, b, ok := dialTableMadeBeforehand(ctx, t, dsn, table)
			if !ok {
				return
			}
			ga, err := a.Acquire(ctx, "jobs", "a", time.Minute)
			if err != nil {
				t.Fatalf("Dial() accepted the table; a.Acquire(jobs) = %v", err)
			}
			if err := a.Release(ctx, ga); err != nil {
				t.Fatalf("Dial() accepted the table; a.Release(%v) = %v", ga, err)
			}
			gb, err := b.Acquire(ctx, "jobs", "b", time.Minute)
			if err != nil {
				t.Fatalf("Dial() accepted the table; b.Acquire(jobs) after a released it = %v", err)
			}
			ga2, err := a.Acquire(ctx, "jobs", "a", time.Minute)
			if err == nil {
				leader, _, lerr := a.Leader(ctx, "jobs")
				t.Fatalf("Dial() accepted the table; a.Acquire(jobs) while b holds %v = %v, nil: two holders (Leader() = %v, %v)", gb, ga2, leader, lerr)
			}
			t.Errorf("Dial() accepted the table (a.Acquire() while b holds it: %v)", err)
		})
	}
}

// execAllowFail runs sql on dsn as the superuser and returns its error.
func execAllowFail(t *testing.T, dsn, sql string) error {
	t.Helper()
	conn := newPool(t, dsn)
	_, err := conn.Exec(ctxFor(t, 30*time.Second), sql)
	return err
}
