package postgres_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/pgtest"
)

// newICUDatabase creates an empty database whose default collation is
// ICU's for locale (as a database made with LOCALE_PROVIDER icu, or an
// en_US.UTF-8 one, sorts: "a" < "B", "_" < "0", unlike bytes), dropped
// when t ends, and returns a superuser DSN for it. The test server's own
// databases sort as C (bytes).
func newICUDatabase(t *testing.T, locale string) string {
	t.Helper()
	s := server(t)
	name := fmt.Sprintf("icu_%d_%d", os.Getpid(), time.Now().UnixNano())
	q := pgx.Identifier{name}.Sanitize()
	s.Exec(t, s.DSN(), "CREATE DATABASE "+q+" TEMPLATE template0 ENCODING 'UTF8' LOCALE_PROVIDER icu ICU_LOCALE '"+locale+"'")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, s.DSN())
		if err != nil {
			t.Errorf("drop database %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+q+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	return pgtest.WithParams(s.DSN(), map[string]string{"dbname": name})
}

// awaitLockWaiters waits until n backends of db's database wait for a
// lock (a heavyweight lock: a row's, or a transaction's).
func awaitLockWaiters(ctx context.Context, t *testing.T, db *pgxpool.Pool, n int) {
	t.Helper()
	for {
		var waiting int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatalf("count lock waiters: %v", err)
		}
		if waiting >= n {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %d lock waiters: %v", n, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestReleaseAndClaimLockInOneOrderUnderICUCollation: the database
// sorts text with ICU's en-US collation, where "a" < "B" (bytes: "B" <
// "a"). Member m1 owns partitions "a" and "B" and releases both; member m2
// claims both at once. An operator's transaction holds row "B" so that
// both statements are under way together: the release, if it locks in
// byte order, holds nothing and waits for "B"; the claim, if it locks in
// the database's order, holds "a" and waits for "B" behind the release.
// The operator commits: a release that then takes "B" and waits for "a"
// makes a cycle with the claim, and PostgreSQL aborts one of them
// (SQLSTATE 40P01): a failed release leaves m1's partitions owned by a
// member that stopped running them, a failed claim claims nothing. Both
// must succeed.
func TestReleaseAndClaimLockInOneOrderUnderICUCollation(t *testing.T) {
	t.Parallel()
	dsn := newICUDatabase(t, "en-US")
	ctx := ctxFor(t, time.Minute)
	c, c2 := open(t, dsn), open(t, dsn)
	pool := newPool(t, dsn)
	var aFirst bool
	if err := pool.QueryRow(ctx, `SELECT 'a'::text < 'B'::text`).Scan(&aFirst); err != nil || !aFirst {
		t.Fatalf("the database does not sort 'a' before 'B' (%v): the test tests nothing", err)
	}
	m1, m2 := join(ctx, t, c, "m1"), join(ctx, t, c2, "m2")
	res, err := c.ClaimPartitions(ctx, m1, []string{"a", "B"})
	if err != nil || res[0].Err != nil || res[1].Err != nil {
		t.Fatalf("m1's claim = %+v, %v", res, err)
	}
	gs := []tenure.Grant{res[0].Grant, res[1].Grant}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM `+partitionsTable+` WHERE grp = 'jobs' AND name = 'B' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	released := make(chan error, 1)
	go func() { released <- c.ReleasePartitions(ctx, m1, gs) }()
	awaitLockWaiters(ctx, t, pool, 1)
	type claimed struct {
		res []tenureResult
		err error
	}
	claimDone := make(chan claimed, 1)
	go func() {
		res, err := c2.ClaimPartitions(ctx, m2, []string{"a", "B"})
		var out []tenureResult
		for _, r := range res {
			out = append(out, tenureResult{r.Grant, r.Err})
		}
		claimDone <- claimed{out, err}
	}()
	awaitLockWaiters(ctx, t, pool, 2)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	relErr, cl := <-released, <-claimDone
	t.Logf("m1's release of %v: %v; m2's claim of a, B: %+v, %v", gs, relErr, cl.res, cl.err)
	for what, err := range map[string]error{"m1's release": relErr, "m2's claim": cl.err} {
		switch {
		case isDeadlock(err):
			t.Errorf("%s failed for a deadlock (SQLSTATE 40P01): the release and the claim lock partition rows in different orders when the database's collation is not bytewise: %v", what, err)
		case err != nil:
			t.Errorf("%s: %v", what, err)
		}
	}
}

// tenureResult is a partition.ClaimResult as the tests log it.
type tenureResult struct {
	Grant tenure.Grant
	Err   error
}
