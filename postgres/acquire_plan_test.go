package postgres_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// statementRecorder keeps the statements a pool sends, with their
// arguments.
type statementRecorder struct {
	mu  sync.Mutex
	got []pgx.TraceQueryStartData
}

func (r *statementRecorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, d)
	return ctx
}

func (r *statementRecorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// take returns the statements sent since the last take.
func (r *statementRecorder) take() []pgx.TraceQueryStartData {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := r.got
	r.got = nil
	return got
}

// TestAcquirePartitionLikeKeyPlanReadsOnlyItsTable: while no group tables
// exist, the one statement that acquires a key that can name a partition
// ("bench/0") reads the leadership table alone, no catalog table:
// PostgreSQL locks and sets up every table a plan names each time it runs
// it, and the look at the group tables' owners (pg_class, pg_authid) made
// the acquisition cost a third more than one of a key without '/'.
func TestAcquirePartitionLikeKeyPlanReadsOnlyItsTable(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	var rec statementRecorder
	c := openTraced(t, dsn, &rec)
	ctx := ctxFor(t, time.Minute)
	for range 2 { // the first acquisition inserts the key's row
		rec.take()
		g, err := c.Acquire(ctx, "bench/0", "a", time.Minute)
		if err != nil {
			t.Fatalf("Acquire(bench/0) = %v", err)
		}
		if err := c.Release(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	rec.take()
	if _, err := c.Acquire(ctx, "bench/0", "a", time.Minute); err != nil {
		t.Fatalf("Acquire(bench/0) = %v", err)
	}
	sent := rec.take()
	if len(sent) != 1 {
		t.Fatalf("Acquire(bench/0) sent %d statements; want 1", len(sent))
	}
	var plan string
	err := pgx.BeginFunc(ctx, newPool(t, dsn), func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+sent[0].SQL, sent[0].Args...).Scan(&plan)
	})
	if err != nil {
		t.Fatalf("EXPLAIN the acquisition: %v", err)
	}
	var top []struct{ Plan planNode }
	if err := json.Unmarshal([]byte(plan), &top); err != nil || len(top) != 1 {
		t.Fatalf("cannot read the plan %s: %v", plan, err)
	}
	var read []string
	var walk func(n planNode)
	walk = func(n planNode) {
		if n.Relation != "" && !slices.Contains(read, n.Relation) {
			read = append(read, n.Relation)
		}
		for _, c := range n.Plans {
			walk(c)
		}
	}
	walk(top[0].Plan)
	if !slices.Equal(read, []string{"cluster_leadership"}) {
		t.Errorf("the acquisition of bench/0 without group tables reads %q; want only the leadership table, cluster_leadership:\n%s\n%s", read, sent[0].SQL, plan)
	}
}
