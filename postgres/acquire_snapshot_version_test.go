package postgres_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// tagRecorder keeps the command tag of every statement a pool sends that
// looks at the group tables (to_regclass): the acquisitions of a key that
// can name a partition.
type tagRecorder struct {
	mu   sync.Mutex
	tags []string
}

type sqlKey struct{}

func (r *tagRecorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, sqlKey{}, d.SQL)
}

func (r *tagRecorder) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	if sql, _ := ctx.Value(sqlKey{}).(string); strings.Contains(sql, "to_regclass") {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.tags = append(r.tags, d.CommandTag.String())
	}
}

// TestOneStatementAcquireGrantsOnlyItsSnapshotsVersion: the one-statement
// acquisition of "jobs/0" (a key that can name a partition) looks at the
// group tables when it starts, so it must grant only the row version its
// snapshot read: a version committed while it waited for the row, as a
// claim's would be (no holder, free), is re-read by READ COMMITTED, and
// granting it could grant a partition that a group made meanwhile owns.
// A transaction writes the row as a claim does and holds it until the
// acquisition waits for it, then commits: the acquisition's statement
// must grant nothing (UPDATE 0). Acquire then goes on as for any key it
// found free, and grants the key above the written token.
func TestOneStatementAcquireGrantsOnlyItsSnapshotsVersion(t *testing.T) {
	t.Parallel()
	const key = "jobs/0"
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	var rec tagRecorder
	c := openTraced(t, dsn, &rec)
	g0, err := c.Acquire(ctx, key, "first#1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Release(ctx, g0); err != nil {
		t.Fatal(err)
	}

	writer, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close(context.Background())
	tx, err := writer.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	var written int64
	if err := tx.QueryRow(ctx, `UPDATE public.cluster_leadership SET holder_id = NULL, fencing_token = fencing_token + 1
WHERE resource = $1 RETURNING fencing_token`, key).Scan(&written); err != nil {
		t.Fatal(err)
	}

	rec.mu.Lock()
	rec.tags = nil
	rec.mu.Unlock()
	type result struct {
		token uint64
		err   error
	}
	done := make(chan result, 1)
	go func() {
		g, err := c.Acquire(ctx, key, "late#1", time.Minute)
		done <- result{g.Token, err}
	}()
	awaitLockWait(ctx, t, newPool(t, dsn), "to_regclass")
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	got := <-done
	if got.err != nil {
		t.Fatalf("Acquire(%s) after the written version committed = %v; want a grant", key, got.err)
	}
	rec.mu.Lock()
	tags := rec.tags
	rec.mu.Unlock()
	t.Logf("acquisition statements: %q; token %d over the written %d", tags, got.token, written)
	if len(tags) == 0 || tags[0] != "UPDATE 0" {
		t.Errorf("the acquisition that waited for a version written after its snapshot ended %q; want UPDATE 0 (it granted the version it re-read)", tags)
	}
	if got.token <= uint64(written) {
		t.Errorf("Acquire(%s) token %d; want above the written %d", key, got.token, written)
	}
}

// awaitLockWait waits until a backend whose statement contains text waits
// for a lock.
func awaitLockWait(ctx context.Context, t *testing.T, pool *pgxpool.Pool, text string) {
	t.Helper()
	for {
		var n int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid() AND strpos(query, $1) > 0`, text).Scan(&n)
		if err != nil {
			t.Fatalf("read pg_stat_activity: %v", err)
		}
		if n > 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no statement containing %q waited for a lock: %v", text, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}
