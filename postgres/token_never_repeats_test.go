package postgres_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-dev/tenure/postgres"
)

// cycle acquires key as holder and releases it, returning the token.
func cycle(t *testing.T, c *postgres.Coordinator, key, holder string) uint64 {
	t.Helper()
	ctx := ctxFor(t, 10*time.Second)
	g, err := c.Acquire(ctx, key, holder, 5*time.Second)
	if err != nil {
		t.Fatalf("Acquire(%q) = %v", key, err)
	}
	if err := c.Release(ctx, g); err != nil {
		t.Fatalf("Release(%v) = %v", g, err)
	}
	return g.Token
}

// TestTokensNeverRepeatWhenRowsGo: an operator deletes a key's row to
// "unstick" it, truncates the table, or drops and re-creates it (a restore
// does the same). Tokens must still only grow: a resource that has seen the
// old ones would otherwise reject every new leader, or accept a repeated
// token from a second one.
func TestTokensNeverRepeatWhenRowsGo(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	pool := newPool(t, dsn)
	steps := []struct {
		name, sql string
	}{
		{"row deleted", `DELETE FROM public.cluster_leadership WHERE resource = 'k'`},
		{"table truncated", `TRUNCATE public.cluster_leadership`},
		{"table dropped and re-created", `DROP TABLE public.cluster_leadership`},
	}
	c := open(t, dsn)
	var last uint64
	for range 3 {
		last = cycle(t, c, "k", "a")
	}
	for _, st := range steps {
		if _, err := pool.Exec(ctxFor(t, 10*time.Second), st.sql); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		c := open(t, dsn) // re-creates the table when it was dropped
		got := cycle(t, c, "k", "b")
		if got <= last {
			t.Fatalf("after the %s: token %d; want greater than %d, the last one granted", st.name, got, last)
		}
		last = got
	}
}

// newPool opens a pool on dsn, closed when t ends.
func newPool(t *testing.T, dsn string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(ctxFor(t, 10*time.Second), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}
