package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
)

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
