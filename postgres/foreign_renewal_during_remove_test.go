package postgres_test

import (
	"context"
	"testing"
	"time"
)

// TestRemoveForeignWaitingOnARenewal: a grant of a day's TTL (the longest
// tenure grants) whose expires_at was pushed out to infinity by hand is
// listed as foreign; RemoveForeign of that record waits on the row's lock
// while the holder renews the grant, with a statement that started after
// RemoveForeign's, so it writes an expires_at a day after a later moment
// than RemoveForeign's start. The row is then a tenure grant as it stands
// (less than a day left), and RemoveForeign must leave it live. The renewal is the one renewSQL makes, run by hand in the
// transaction that holds the lock: the holder's own Renew would queue
// behind RemoveForeign.
func TestRemoveForeignWaitingOnARenewal(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	c, pool := open(t, dsn), newPool(t, dsn)
	ctx := ctxFor(t, time.Minute)
	g, err := c.Acquire(ctx, "p/day", "h1", 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE `+c.Table()+` SET expires_at = 'infinity' WHERE resource = 'p/day'`); err != nil {
		t.Fatal(err)
	}
	rs, err := c.ListForeign(ctx, "p/")
	if err != nil || len(rs) != 1 || rs[0].Token != g.Token {
		t.Fatalf("ListForeign(p/) = %+v, %v; want p/day at token %d", rs, err, g.Token)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, `SELECT 1 FROM `+c.Table()+` WHERE resource = 'p/day' FOR NO KEY UPDATE`); err != nil {
		t.Fatal(err)
	}
	type result struct {
		removed bool
		err     error
	}
	done := make(chan result, 1)
	go func() {
		removed, err := c.RemoveForeign(ctx, rs[0])
		done <- result{removed, err}
	}()
	waitUntil(t, 20*time.Second, "RemoveForeign waits on the row lock", func() bool {
		var n int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid() AND query LIKE '%-infinity%'`).Scan(&n)
		return err == nil && n == 1
	})
	time.Sleep(10 * time.Millisecond) // the renewal's statement starts later than RemoveForeign's
	if _, err := tx.Exec(ctx, `UPDATE `+c.Table()+` SET expires_at = statement_timestamp() + interval '24 hours'
WHERE resource = 'p/day' AND holder_id = $1 AND fencing_token = $2`, g.Holder, int64(g.Token)); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.removed || r.err != nil {
		t.Errorf("RemoveForeign(%v) waiting on its renewal = %v, %v; want false, nil: the renewed row is a live grant", g, r.removed, r.err)
	}
	if l, held, err := c.Leader(ctx, "p/day"); err != nil || !held || l.Token != g.Token {
		t.Errorf("Leader(p/day) after the renewal = %v, held %v, %v; want the renewed grant %v", l, held, err, g)
	}
}
