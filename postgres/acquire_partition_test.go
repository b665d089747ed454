package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
)

// TestAcquireSeesOwnerThatJoinedDuringItsWait: an Acquire of a partition's
// key takes its snapshot, then waits on the partition row's lock (held by
// an operator's transaction). Meanwhile a member joins, and the
// operator's transaction makes it the partition's owner, as a claim would,
// and commits. The Acquire then locks the row and finds an owner whose
// membership row its snapshot cannot see: it must not take that for a
// membership that is gone, and refuses the key, naming the member.
func TestAcquireSeesOwnerThatJoinedDuringItsWait(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	c, other := open(t, dsn), open(t, dsn)
	early, err := other.JoinGroup(ctx, "jobs", "early", time.Minute, 1) // makes the tables
	if err != nil {
		t.Fatal(err)
	}
	if res, err := other.ClaimPartitions(ctx, early, []string{"1"}); err != nil || res[0].Err != nil {
		t.Fatalf("claim = %+v, %v", res, err)
	}
	g, err := c.Acquire(ctx, "jobs/0", "x", time.Minute) // writes partition 0's row, ownerless
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Release(ctx, g); err != nil {
		t.Fatal(err)
	}
	tx, err := newPool(t, dsn).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM `+partitionsTable+` WHERE grp = 'jobs' AND name = '0' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.Acquire(ctx, "jobs/0", "x", time.Minute)
		done <- err
	}()
	time.Sleep(500 * time.Millisecond) // the Acquire's statement has its snapshot and waits on the lock
	late, err := other.JoinGroup(ctx, "jobs", "late", time.Minute, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE `+partitionsTable+` SET owner_epoch = $1 WHERE grp = 'jobs' AND name = '0'`, int64(late.Epoch)); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	err = <-done
	var held *tenure.HeldError
	if !errors.As(err, &held) || held.Holder != "late" {
		t.Fatalf("Acquire(jobs/0) while member late owns partition 0 = %v; want a *tenure.HeldError naming late", err)
	}
}
