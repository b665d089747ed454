// Attacks of review-pgguard (issue 34, "safe by class") on the guard
// against a leadership table altered in place while coordinators run (see
// the package's guard, and TestLeadershipAlteredInPlace for the scene).
// Each test is an administrator, the table's owner in a New York session
// beside a UTC server, who alters the table while coordinators run, and
// asserts the safe outcome: no second holder of a live key, no token given
// twice.

package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/partition"
	"github.com/tenure-dev/tenure/postgres"
)

// TestReviewInPlaceClaimAfterShapeCheck: e holds jobs/5 as a single key
// for a minute. Member m claims partition 5: the claim reads the
// leadership columns' shape (checkGroupTables, in beginGroup), then
// deletes the group's expired memberships, then claims in a transaction
// that reads jobs/5's leadership row. The administrator holds an expired
// membership row's lock, so that the claim waits in its deletion, after
// its shape check; alters expires_at in place to timestamp (which stores
// e's lease's end five hours early) in the same transaction, and commits.
// The claim must not take partition 5 while e's lease has a minute left.
func TestReviewInPlaceClaimAfterShapeCheck(t *testing.T) {
	t.Parallel()
	s := newGroupTablesScene(t)
	ctx := ctxFor(t, time.Minute)
	g, err := s.ec.Acquire(ctx, "jobs/5", "e", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	x := join(ctx, t, s.mc, "x")
	if _, err := s.admin.Exec(ctx, `UPDATE cluster_leadership_members SET expires_at = now() - interval '1 hour' WHERE epoch = $1`, int64(x.Epoch)); err != nil {
		t.Fatal(err)
	}
	tx, err := s.admin.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM cluster_leadership_members WHERE epoch = $1 FOR UPDATE`, int64(x.Epoch)); err != nil {
		t.Fatal(err)
	}
	type claimed struct {
		res []partition.ClaimResult
		err error
	}
	done := make(chan claimed, 1)
	go func() {
		res, err := s.mc.ClaimPartitions(ctx, s.m, []string{"5"})
		done <- claimed{res, err}
	}()
	awaitLockWait(ctx, t, s.ec.Pool(), "USING gone")
	if _, err := tx.Exec(ctx, `ALTER TABLE cluster_leadership ALTER COLUMN expires_at TYPE timestamp`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	c := <-done
	t.Logf("ClaimPartitions(m, 5) after the ALTER = %+v, %v", c.res, c.err)
	if c.err == nil && c.res[0].Err == nil {
		t.Errorf("ClaimPartitions(m, 5), shape checked before an ALTER in place of expires_at and claimed after, while e holds jobs/5 (token %d) with %s left = token %d; want an error",
			g.Token, g.Sent.Add(g.TTL).Until().Round(time.Millisecond), c.res[0].Grant.Token)
	}
	if c.err != nil && !errors.Is(c.err, postgres.ErrTableShape) {
		t.Errorf("ClaimPartitions(m, 5) after expires_at was altered in place = %v; want ErrTableShape", c.err)
	}
}
