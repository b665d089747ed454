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
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
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
	awaitLockWait(ctx, t, s.ec.Pool(), "WITH gone AS MATERIALIZED")
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

// TestReviewInPlaceHolderLength: holder_id altered in place from text to
// varchar(255), a shape New accepts, but only while it refuses holders
// longer than the column (see TestLeadershipTableHolderLength):
// PostgreSQL stores a string too long for a varchar(n) without an error
// when its excess is spaces, so holder "x…x " (255 x and a space) is
// stored as "x…x", another holder, who may then acquire the first's live
// key (a holder may acquire its own key again). The coordinator ran its
// statements before the ALTER. Holder "x…x " must be refused, or the
// other's Acquire must be (ErrHeld).
func TestReviewInPlaceHolderLength(t *testing.T) {
	t.Parallel()
	s := newInPlaceScene(t)
	ctx := ctxFor(t, time.Minute)
	s.exec(t, `ALTER TABLE `+s.c1.Table()+` ALTER COLUMN holder_id TYPE varchar(255)`)
	long, cut := strings.Repeat("x", 255)+" ", strings.Repeat("x", 255)
	ga, err := s.c1.Acquire(ctx, "jobs", long, time.Minute)
	if err != nil {
		if !errors.Is(err, tenure.ErrInvalidHolder) && !errors.Is(err, postgres.ErrTableShape) {
			t.Fatalf("Acquire(jobs) by a 256-byte holder after holder_id became varchar(255) = %v; want it granted, ErrInvalidHolder or ErrTableShape", err)
		}
		t.Logf("Acquire(jobs) by a 256-byte holder after holder_id became varchar(255) = %v", err)
		return
	}
	if gb, err := s.c2.Acquire(ctx, "jobs", cut, time.Minute); !errors.Is(err, tenure.ErrHeld) {
		t.Errorf("Acquire(jobs) by the 255 x, after holder_id became varchar(255) in place, while %q (256 bytes) holds token %d with %s left = token %d, %v; want ErrHeld",
			long[250:], ga.Token, ga.Sent.Add(ga.TTL).Until().Round(time.Millisecond), gb.Token, err)
	}
}

// TestReviewInPlaceMixedPool: c1's pool has run Leader(k) on several
// connections before the ALTER (expires_at made timestamp from New York
// time); then Acquires of h's key k by "other" run on it from several
// goroutines at once, so that some run on connections that prepared
// before the ALTER, some on connections that prepare after, and some
// while others close their stale connections. None may be granted k, and
// each must fail with ErrTableShape.
func TestReviewInPlaceMixedPool(t *testing.T) {
	t.Parallel()
	s := newInPlaceScene(t)
	ctx := ctxFor(t, time.Minute)
	errs := make([]error, 8)
	race := func(op func() error) {
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() { errs[i] = op() })
		}
		wg.Wait()
	}
	race(func() error { _, _, err := s.c1.Leader(ctx, "k"); return err })
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	conns := s.c1.Pool().Stat().TotalConns()
	s.exec(t, `ALTER TABLE `+s.c1.Table()+` ALTER COLUMN expires_at TYPE timestamp`)
	race(func() error {
		g, err := s.c1.Acquire(ctx, "k", "other", time.Minute)
		if err == nil {
			return fmt.Errorf("granted token %d", g.Token)
		}
		return err
	})
	for i, err := range errs {
		if !errors.Is(err, postgres.ErrTableShape) {
			t.Errorf("Acquire(k, other) #%d after expires_at was altered in place, on a pool of %d connections that prepared before, while h holds k with %s left = %v; want ErrTableShape",
				i, conns, s.g.Sent.Add(s.g.TTL).Until().Round(time.Millisecond), err)
		}
	}
}

// TestReviewInPlaceDomain: expires_at altered in place to a domain over
// timestamp (without time zone), from New York time, and, on another
// table, holder_id to a domain over text under a case-insensitive
// collation: each result column's type changes to the domain's, and the
// check must refuse a domain whatever its base type.
func TestReviewInPlaceDomain(t *testing.T) {
	t.Parallel()
	for name, ddl := range map[string]string{
		"expires_at": `CREATE DOMAIN lease_end AS timestamp;
ALTER TABLE cluster_leadership ALTER COLUMN expires_at TYPE lease_end`,
		"holder_id": `CREATE COLLATION case_insensitive (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE DOMAIN holder AS text COLLATE case_insensitive;
ALTER TABLE cluster_leadership ALTER COLUMN holder_id TYPE holder`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newInPlaceScene(t)
			s.exec(t, ddl)
			for _, who := range []string{"other", "H"} {
				if g, err := s.c2.Acquire(ctxFor(t, time.Minute), "k", who, time.Minute); !errors.Is(err, postgres.ErrTableShape) {
					t.Errorf("Acquire(k, %s) after %s became a domain in place, while h holds k with %s left = %v, %v; want ErrTableShape",
						who, name, s.g.Sent.Add(s.g.TTL).Until().Round(time.Millisecond), g, err)
				}
			}
		})
	}
}
