package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/fence"
	"github.com/tenure-dev/tenure/postgres"
)

// assignment reads shard 1 of the seed's table.
func assignment(t testing.TB, dsn string) (string, uint64) {
	t.Helper()
	var a string
	var tok int64
	queryRow(t, dsn, `SELECT assignment, fencing_token FROM shard_assignment WHERE shard_id = 1`, nil, &a, &tok)
	return a, uint64(tok)
}

func TestFenceUpdate(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	shardTable(t, dsn)
	ctx := ctxFor(t, time.Minute)
	pool := open(t, dsn).Pool()
	write := func(token uint64, v string) error {
		return postgres.FenceUpdate(ctx, pool, "public.shard_assignment", "shard_id", 1, token, map[string]any{"assignment": v})
	}
	if err := write(5, "five"); err != nil {
		t.Fatalf("FenceUpdate(token 5) error = %v", err)
	}
	if err := write(5, "five again"); err != nil {
		t.Fatalf("FenceUpdate(token 5 again) error = %v; the same term may write again", err)
	}
	err := write(4, "four")
	var se *fence.StaleError
	if !errors.As(err, &se) || se.Presented != 4 || se.Required != 5 {
		t.Fatalf("FenceUpdate(token 4) error = %v; want *fence.StaleError{Presented: 4, Required: 5}", err)
	}
	if !tenure.IsStale(err) || !strings.Contains(err.Error(), `"shard_assignment"`) {
		t.Errorf("FenceUpdate(token 4) error = %v; want it to match ErrStaleToken and name the table", err)
	}
	if a, tok := assignment(t, dsn); a != "five again" || tok != 5 {
		t.Fatalf("row = %q, %d; want %q, 5 (the stale write changed nothing)", a, tok, "five again")
	}
	if err := write(0, "zero"); !errors.Is(err, fence.ErrMissingToken) {
		t.Errorf("FenceUpdate(token 0) error = %v; want fence.ErrMissingToken", err)
	}
	if err := write(1<<63, "huge"); !errors.Is(err, fence.ErrMalformedToken) {
		t.Errorf("FenceUpdate(token 2^63) error = %v; want fence.ErrMalformedToken", err)
	}
	err = postgres.FenceUpdate(ctx, pool, "shard_assignment", "shard_id", 99, 9, map[string]any{"assignment": "x"})
	if !errors.Is(err, postgres.ErrRowNotFound) || tenure.IsStale(err) {
		t.Errorf("FenceUpdate(missing row) error = %v; want ErrRowNotFound, not stale", err)
	}
	// Values are parameters; quoted names are identifiers.
	evil := `'); UPDATE shard_assignment SET fencing_token = 0; --`
	if err := write(6, evil); err != nil {
		t.Fatal(err)
	}
	if a, tok := assignment(t, dsn); a != evil || tok != 6 {
		t.Fatalf("row = %q, %d; want the value verbatim, token 6", a, tok)
	}
	err = postgres.FenceUpdate(ctx, pool, "shard_assignment", "shard_id", 1, 7, map[string]any{`assignment = 'x', fencing_token`: 1})
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("FenceUpdate(odd column name) error = %v; want an unknown-column error", err)
	}
	if err := postgres.FenceUpdate(ctx, pool, "shard_assignment", "shard_id", 1, 7, map[string]any{"fencing_token": 1}); !errors.Is(err, postgres.ErrInvalidOption) {
		t.Errorf("FenceUpdate(set fencing_token) error = %v; want ErrInvalidOption", err)
	}
}

// TestFenceGuardTx runs the guard inside transactions: a stale write rolls
// back with everything else in its transaction, and of two concurrent
// writers the older token loses even when it commits last.
func TestFenceGuardTx(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	guard := shardTable(t, dsn)
	server(t).Exec(t, dsn, `CREATE TABLE audit (entry text)`)
	ctx := ctxFor(t, time.Minute)
	pool := open(t, dsn).Pool()

	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		return guard.Update(ctx, tx, 1, 10, map[string]any{"assignment": "ten"})
	}); err != nil {
		t.Fatal(err)
	}
	var updated bool
	queryRow(t, dsn, `SELECT updated_at IS NOT NULL FROM shard_assignment WHERE shard_id = 1`, nil, &updated)
	if !updated {
		t.Error("updated_at not set; want CURRENT_TIMESTAMP (UpdatedAtColumn)")
	}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO audit VALUES ('stale writer was here')`); err != nil {
			return err
		}
		return guard.Update(ctx, tx, 1, 9, map[string]any{"assignment": "nine"})
	})
	if !tenure.IsStale(err) {
		t.Fatalf("stale transaction error = %v; want stale", err)
	}
	var n int
	queryRow(t, dsn, `SELECT count(*) FROM audit`, nil, &n)
	if n != 0 {
		t.Errorf("audit has %d rows; want 0 (the stale transaction rolled back)", n)
	}

	// Writer 12 locks the row first; writer 11 waits for it, then is refused.
	tx12, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx12.Rollback(context.Background())
	if err := guard.Update(ctx, tx12, 1, 12, map[string]any{"assignment": "twelve"}); err != nil {
		t.Fatal(err)
	}
	res := make(chan error, 1)
	go func() {
		res <- pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			return guard.Update(ctx, tx, 1, 11, map[string]any{"assignment": "eleven"})
		})
	}()
	for waiting := 0; waiting == 0; { // until writer 11 waits for the row lock
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := tx12.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	err = <-res
	var se *fence.StaleError
	if !errors.As(err, &se) || se.Presented != 11 || se.Required != 12 {
		t.Fatalf("concurrent older writer error = %v; want StaleError{11, 12}", err)
	}
	if a, tok := assignment(t, dsn); a != "twelve" || tok != 12 {
		t.Fatalf("row = %q, %d; want %q, 12", a, tok, "twelve")
	}
}

func TestAddFencingColumn(t *testing.T) {
	t.Parallel()
	srv := server(t)
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	pool := open(t, dsn).Pool()
	srv.Exec(t, dsn, `CREATE SCHEMA app; CREATE TABLE app.jobs (id text PRIMARY KEY, state text); INSERT INTO app.jobs VALUES ('j1', 'new')`)
	for range 2 { // idempotent
		if err := postgres.AddFencingColumn(ctx, pool, "app.jobs"); err != nil {
			t.Fatalf("AddFencingColumn() error = %v", err)
		}
	}
	var tok int64
	queryRow(t, dsn, `SELECT fencing_token FROM app.jobs WHERE id = 'j1'`, nil, &tok)
	if tok != 0 {
		t.Fatalf("existing row's token = %d; want 0", tok)
	}
	if err := postgres.FenceUpdate(ctx, pool, "app.jobs", "id", "j1", 3, map[string]any{"state": "running"}); err != nil {
		t.Fatalf("FenceUpdate() after AddFencingColumn error = %v", err)
	}
	srv.Exec(t, dsn, `CREATE TABLE app.textual (id int, fencing_token text)`)
	err := postgres.AddFencingColumn(ctx, pool, "app.textual")
	if !errors.Is(err, postgres.ErrTableShape) || !strings.Contains(err.Error(), `"app"."textual"`) || !strings.Contains(err.Error(), `"fencing_token" is text`) {
		t.Fatalf("AddFencingColumn(text column) error = %v; want ErrTableShape naming table and column", err)
	}
	if err := postgres.AddFencingColumn(ctx, pool, "app.missing"); err == nil || !strings.Contains(err.Error(), `"app"."missing"`) {
		t.Fatalf("AddFencingColumn(missing table) error = %v; want an error naming it", err)
	}
}
