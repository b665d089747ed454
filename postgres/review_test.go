package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-dev/tenure"
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

// TestSearchPathDoesNotSplitTheTable: two nodes connect with different
// search_paths (two roles, or a connection pooler's setting). With the
// table found through the search_path each would use its own table and
// both would lead the same key. The table is pinned to one schema.
func TestSearchPathDoesNotSplitTheTable(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	pool := newPool(t, dsn)
	if _, err := pool.Exec(ctxFor(t, 10*time.Second), `CREATE SCHEMA other`); err != nil {
		t.Fatal(err)
	}
	other := dsn + " options='-c search_path=other,public'"

	b := open(t, other) // first: with the search_path it would create other.cluster_leadership
	a := open(t, dsn)
	ctx := ctxFor(t, 10*time.Second)
	ga, err := a.Acquire(ctx, "k", "a", 5*time.Second)
	if err != nil {
		t.Fatalf("a.Acquire() = %v", err)
	}
	_, err = b.Acquire(ctx, "k", "b", 5*time.Second)
	var held *tenure.HeldError
	if !errors.As(err, &held) || held.Holder != "a" || held.Token != ga.Token {
		t.Fatalf("b.Acquire() with search_path other,public while a holds the key = %v; want a *HeldError naming a", err)
	}
}

// TestRenewalAfterLockWaitDoesNotRevive: a renewal is sent before the
// lease expires, but waits on the row's lock (a long transaction holds it)
// until after the expiry. It must report the grant lost, not extend a lease
// that expired while it waited.
func TestRenewalAfterLockWaitDoesNotRevive(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		renew func(ctx context.Context, c *postgres.Coordinator, g, other tenure.Grant) error
	}{
		{"Renew", func(ctx context.Context, c *postgres.Coordinator, g, _ tenure.Grant) error {
			_, err := c.Renew(ctx, g)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn := newDB(t)
			pool := newPool(t, dsn)
			c := open(t, dsn)
			ctx := ctxFor(t, 30*time.Second)
			g, err := c.Acquire(ctx, "k", "a", time.Second)
			if err != nil {
				t.Fatal(err)
			}
			other, err := c.Acquire(ctx, "other", "a", 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(context.Background())
			if _, err := tx.Exec(ctx, `SELECT 1 FROM public.cluster_leadership WHERE resource = 'k' FOR UPDATE`); err != nil {
				t.Fatal(err)
			}
			renewed := make(chan error, 1)
			go func() { renewed <- tc.renew(ctx, c, g, other) }()
			time.Sleep(1500 * time.Millisecond) // the lease (1s) expires while the renewal waits
			select {
			case err := <-renewed:
				t.Fatalf("renewal returned %v while the row was locked; want it to wait", err)
			default:
			}
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-renewed; !errors.Is(err, tenure.ErrLost) {
				t.Fatalf("renewal that waited past the expiry = %v; want ErrLost", err)
			}
		})
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
