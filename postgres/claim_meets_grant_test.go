package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/partition"
	"github.com/tenure-dev/tenure/postgres"
)

// TestClaimMeetsGrantMadeWhileItWaits: a member's claim of partition 0 of g
// is under way (its snapshot taken, its token drawn) and waits on the
// partition row's lock, which an admin's transaction holds (SELECT ... FOR
// UPDATE, no change); meanwhile a new Coordinator acquires g/0 with the
// one-statement acquisition, which reads no partition row. When the lock
// is let go, the claim must meet that grant on the key's leadership row:
// g/0 is held by the single-key holder, not claimed.
func TestClaimMeetsGrantMadeWhileItWaits(t *testing.T) {
	dsn := newDB(t)
	c := open(t, dsn)
	ctx := ctxFor(t, time.Minute)
	m, err := c.JoinGroup(ctx, "g", "m", time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	g0, err := c.Acquire(ctx, "g/0", "single", time.Minute) // writes partition 0's row, ownerless
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Release(ctx, g0); err != nil { // the row names its holder: the one-statement path
		t.Fatal(err)
	}
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	tx, err := admin.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(ctx, `SELECT 1 FROM public.cluster_leadership_partitions WHERE grp = 'g' AND name = '0' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	claimed := make(chan []partition.ClaimResult, 1)
	go func() {
		res, err := c.ClaimPartitions(ctx, m, []string{"0"})
		if err != nil {
			t.Errorf("ClaimPartitions(m, 0) = %v", err)
		}
		claimed <- res
	}()
	waitForLockWait(t, ctx, c)
	fresh, err := postgres.New(ctx, c.Pool())
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	g, err := fresh.Acquire(ctx, "g/0", "single-2", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	res := <-claimed
	if res == nil {
		return
	}
	t.Logf("single-2's grant %d; the claim: %+v, %v", g.Token, res[0].Grant, res[0].Err)
	if !errors.Is(res[0].Err, tenure.ErrHeld) {
		t.Errorf("claim of g/0 while single-2 holds it (token %d) = %+v, %v; want tenure.ErrHeld", g.Token, res[0].Grant, res[0].Err)
	}
	if l, ok, err := c.Leader(ctx, "g/0"); err != nil || !ok || l.Holder != "single-2" || l.Token != g.Token {
		t.Errorf("Leader(g/0) = %v, %v, %v; want single-2's grant %d", l, ok, err, g.Token)
	}
}

// waitForLockWait waits until a backend of the test's database waits on a
// lock.
func waitForLockWait(t *testing.T, ctx context.Context, c *postgres.Coordinator) {
	t.Helper()
	for {
		var n int
		if err := c.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("nothing waited on a lock")
		case <-time.After(5 * time.Millisecond):
		}
	}
}
