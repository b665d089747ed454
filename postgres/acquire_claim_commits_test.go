package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/postgres"
)

// TestAcquireWhileAClaimCommits: a new Coordinator's Acquire of "g/0", a
// key that can name a partition, starts while no group tables exist (its
// statement finds none) and waits on the key's row, locked by a
// transaction that makes the group tables, a live member m, its ownership
// of partition 0 and the key's leadership row as a claim writes it. That
// transaction commits; the Acquire then reaches a row version that looks
// free, and must find the partition owned by m instead of granting the key.
func TestAcquireWhileAClaimCommits(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	c := open(t, dsn)
	pool := newPool(t, dsn)
	g, err := c.Acquire(ctx, "g/0", "s", time.Minute) // the key's row exists
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Release(ctx, g); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var epoch int64
	claimed := g.Token + 1
	for _, s := range []struct {
		sql  string
		args []any
		scan []any
	}{
		{sql: postgres.GroupTablesSQL(c)},
		{sql: `INSERT INTO public.cluster_leadership_members (grp, member, ttl_us, expires_at)
VALUES ('g', 'm', 60000000, now() + interval '1 minute') RETURNING epoch`, scan: []any{&epoch}},
		{sql: `INSERT INTO public.cluster_leadership_partitions (grp, name, owner_epoch, fencing_token) VALUES ('g', '0', $1, $2)`, args: []any{&epoch, claimed}},
		{sql: `UPDATE public.cluster_leadership SET holder_id = NULL, fencing_token = $1 WHERE resource = 'g/0'`, args: []any{claimed}},
	} {
		if s.scan != nil {
			err = tx.QueryRow(ctx, s.sql, s.args...).Scan(s.scan...)
		} else {
			_, err = tx.Exec(ctx, s.sql, s.args...)
		}
		if err != nil {
			t.Fatalf("%s: %v", s.sql, err)
		}
	}
	type acquired struct {
		g   tenure.Grant
		err error
	}
	done := make(chan acquired, 1)
	fresh := open(t, dsn)
	go func() {
		g, err := fresh.Acquire(ctx, "g/0", "single", time.Minute)
		done <- acquired{g, err}
	}()
	awaitLockWaiters(ctx, t, pool, 1)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	a := <-done
	t.Logf("Acquire(g/0) = %v, %v", a.g, a.err)
	var held *tenure.HeldError
	if !errors.As(a.err, &held) || held.Holder != "m" {
		t.Errorf("Acquire(g/0) while member m's claim of partition 0 (token %d) committed = %v, %v; want a *tenure.HeldError naming m", claimed, a.g, a.err)
	}
}
