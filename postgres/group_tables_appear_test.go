package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/partition"
)

// TestTwoAcquiresWhileGroupTablesAppearDoNotDeadlock: the leadership row of key
// "jobs/0" exists, the group tables do not. An operator's transaction holds
// the key's row; x's Acquire of the key finds no group tables and waits on
// the row. Then member m joins group "jobs" (the tables appear) and y's
// Acquire of the key writes the partition's row (the group path: the
// partition's row before the key's) and waits on the key's row too. The
// operator commits. x, granted the key, writes the partition's row after
// the key's (the no-group path); if that waits for y's uncommitted
// partition row while y waits for the key's row, PostgreSQL aborts one
// (SQLSTATE 40P01). One Acquire must get the key and the other a
// HeldError, neither a deadlock.
func TestTwoAcquiresWhileGroupTablesAppearDoNotDeadlock(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	cx, cy, cm := open(t, dsn), open(t, dsn), open(t, dsn)
	pool := newPool(t, dsn)
	g, err := cx.Acquire(ctx, "jobs/0", "x", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := cx.Release(ctx, g); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM public.cluster_leadership WHERE resource = 'jobs/0' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	type acquired struct {
		g   tenure.Grant
		err error
	}
	xDone, yDone := make(chan acquired, 1), make(chan acquired, 1)
	go func() {
		g, err := cx.Acquire(ctx, "jobs/0", "x", time.Minute)
		xDone <- acquired{g, err}
	}()
	awaitLockWaiters(ctx, t, pool, 1)
	join(ctx, t, cm, "m")
	go func() {
		g, err := cy.Acquire(ctx, "jobs/0", "y", time.Minute)
		yDone <- acquired{g, err}
	}()
	awaitLockWaiters(ctx, t, pool, 2)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	x, y := <-xDone, <-yDone
	t.Logf("x: %v, %v; y: %v, %v", x.g, x.err, y.g, y.err)
	granted := 0
	for who, a := range map[string]acquired{"x": x, "y": y} {
		var held *tenure.HeldError
		switch {
		case a.err == nil:
			granted++
		case isDeadlock(a.err):
			t.Errorf("%s's Acquire failed for a deadlock (SQLSTATE 40P01): the Acquire that found no group tables locks the key's row before the partition's, the other the partition's first: %v", who, a.err)
		case !errors.As(a.err, &held):
			t.Errorf("%s's Acquire: %v", who, a.err)
		}
	}
	if granted > 1 {
		t.Errorf("both Acquires granted the key")
	}
}

// TestAcquireWhileGroupTablesAppear (an adversary's attack): an Elector's Acquire of "jobs/0"
// finds no group tables, then its UPDATE waits on the key's row lock (an
// operator's open transaction); a member joins (creating the tables) and
// claims partition 0, which waits on the same lock (a claim writes the
// key's leadership row); the operator's transaction ends; both go on, and
// at most one of them holds the key.
func TestAcquireWhileGroupTablesAppear(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	elector, member := open(t, dsn), open(t, dsn)
	pool := newPool(t, dsn)
	g0, err := elector.Acquire(ctx, "jobs/0", "elector#0", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := elector.Release(ctx, g0); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, `SELECT 1 FROM `+elector.Table()+` WHERE resource = 'jobs/0' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	type result struct {
		g   tenure.Grant
		err error
	}
	done := make(chan result, 1)
	go func() {
		g, err := elector.Acquire(ctx, "jobs/0", "elector#1", time.Minute)
		done <- result{g, err}
	}()
	waitUntil(t, 20*time.Second, "the Acquire waits on the row lock", func() bool {
		var n int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%pg_catalog.to_regclass($5) IS%'`).Scan(&n)
		return err == nil && n == 1
	})
	m, err := member.JoinGroup(ctx, "jobs", "member#1", time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	claimed := make(chan error, 1)
	var res []partition.ClaimResult
	go func() {
		var err error
		res, err = member.ClaimPartitions(ctx, m, []string{"0"})
		claimed <- err
	}()
	waitUntil(t, 20*time.Second, "the claim waits on the row lock", func() bool {
		var n int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO%'`).Scan(&n)
		return err == nil && n == 1
	})
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-claimed; err != nil {
		t.Fatal(err)
	}
	r := <-done
	t.Logf("claim: %+v; Acquire: %+v, %v", res[0], r.g, r.err)
	if res[0].Err == nil && r.err == nil {
		lost, err := member.CheckPartitions(ctx, m, []tenure.Grant{res[0].Grant})
		l, ok, lerr := elector.Leader(ctx, "jobs/0")
		t.Errorf("jobs/0 held by member#1 (token %d; CheckPartitions lost %v, %v) and by elector#1 (token %d; Leader %+v %v %v) at once",
			res[0].Grant.Token, lost, err, r.g.Token, l, ok, lerr)
	}
}
