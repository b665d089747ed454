// Attacks of review-pgshape (issue 34) on the group tables changed in
// place while coordinators run. Acquire reads the group tables' shape in
// every statement that can grant a key naming a partition, so each of
// these is refused:
//
//   - TestReviewGroupTablesAlterInPlace: the members table's expires_at
//     altered in place to timestamp (without time zone) from a session
//     whose TimeZone is west of the server's, which stores every
//     membership's end hours early. (Red, a grant over a live member's
//     partition with 59.9 s of its lease left, while Acquire trusted a
//     shape it had read once per pair of tables.)
//   - TestReviewGroupTablesAlterInPlaceWindow: the same with a partition
//     runner: no Elector grant before the runner's term ended.
//   - TestReviewForcedRowSecurity: row security forced on the members
//     table by its owner, with a policy that hides tenure's rows. (Red
//     before the shape check named row security: a grant with 59.9 s of
//     the member's lease left.)

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

// TestReviewGroupTablesAlterInPlace: after an ALTER in place of the
// members table's expires_at, no Acquire grants a live member's
// partition, on the member's coordinator or on another; and once the
// member's renewal saw the shape, Acquire refuses on either coordinator.
func TestReviewGroupTablesAlterInPlace(t *testing.T) {
	t.Parallel()
	s := newGroupTablesScene(t)
	ctx := ctxFor(t, 30*time.Second)
	if _, err := s.admin.Exec(ctx, `ALTER TABLE cluster_leadership_members ALTER COLUMN expires_at TYPE timestamp`); err != nil {
		t.Fatal(err)
	}
	for who, err := range s.acquire(t, "0") {
		if !errors.Is(err, postgres.ErrTableShape) {
			t.Errorf("Acquire(jobs/0) on %s after the ALTER, while m owns partition 0 and has not been told = %v; want ErrTableShape", who, err)
		}
	}
	_, err := s.mc.RenewMember(ctx, s.m) // the member's first chance to learn
	t.Logf("m's renewal after the Acquires: %v", err)
	for who, err := range s.acquire(t, "1") {
		if !errors.Is(err, postgres.ErrTableShape) {
			t.Errorf("Acquire(jobs/1) on %s after m's renewal saw the shape = %v; want ErrTableShape (docs: refused by Acquire from then on)", who, err)
		}
	}
}

// TestReviewGroupTablesAlterInPlaceWindow measures the window the docs
// admit, with a real member: a partition runner (TTL 3 s) runs jobs/0; an
// Elector's coordinator that saw the group tables Acquires jobs/0 in a
// loop from the moment an administrator alters expires_at in place (as
// in TestReviewGroupTablesAlterInPlace). A grant before the member's term
// of jobs/0 ended is two owners; the test fails with how long they
// overlapped. The runner learns at its next sync (a group operation, every
// 100 ms here), which fails on the shape and ends its terms.
func TestReviewGroupTablesAlterInPlaceWindow(t *testing.T) {
	t.Parallel()
	s := newGroupTablesScene(t) // its member m is not this test's: it leaves
	ctx := ctxFor(t, time.Minute)
	if err := s.mc.LeaveGroup(ctx, s.m); err != nil {
		t.Fatal(err)
	}
	started, ended := make(chan time.Time, 1), make(chan time.Time, 1)
	cfg := partition.DefaultConfig()
	cfg.Key, cfg.Partitions, cfg.Holder, cfg.Instance, cfg.TTL = "jobs", 1, "a", "1", 3*time.Second
	g, err := partition.New(s.mc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	defer func() { stop(); <-done }()
	go func() {
		defer close(done)
		_ = g.Run(rctx, func(ctx context.Context, p partition.Partition, term *tenure.Term) error {
			select {
			case started <- time.Now():
			default:
			}
			<-ctx.Done()
			select {
			case ended <- time.Now():
			default:
			}
			return nil
		})
	}()
	<-started
	time.Sleep(500 * time.Millisecond)
	altered := time.Now()
	if _, err := s.admin.Exec(ctx, `ALTER TABLE cluster_leadership_members ALTER COLUMN expires_at TYPE timestamp`); err != nil {
		t.Fatal(err)
	}
	var granted time.Time
	for granted.IsZero() && time.Since(altered) < 10*time.Second {
		if _, err := s.ec.Acquire(ctx, "jobs/0", "e", time.Minute); err == nil {
			granted = time.Now()
		}
	}
	end := <-ended
	if granted.IsZero() {
		t.Logf("ALTER at +0; a's term of jobs/0 ended at %s; the Elector was not granted jobs/0 in 10 s", end.Sub(altered))
		return
	}
	t.Logf("ALTER at +0; Elector granted jobs/0 at %s; a's term of jobs/0 ended at %s", granted.Sub(altered), end.Sub(altered))
	if granted.Before(end) {
		t.Errorf("the Elector held jobs/0 from %s after the ALTER, %s before member a's term of it ended: two owners", granted.Sub(altered), end.Sub(granted))
	}
}

// TestReviewForcedRowSecurity: the group tables' owner, tenure's own role (no
// superuser, which row security never applies to), forces row security on
// the members table with a tenant policy its coordinators' sessions do not
// meet. Acquire must not find m's partition free: it is refused, with
// ErrTableShape naming row security (or a HeldError naming m).
func TestReviewForcedRowSecurity(t *testing.T) {
	t.Parallel()
	r := newPlantingRoles(t)
	ctx := ctxFor(t, time.Minute)
	mc, ec := open(t, r.victimDSN), open(t, r.victimDSN) // the member's; an Elector's
	m := join(ctx, t, mc, "m")
	claim0(ctx, t, mc, m)
	admin, err := pgx.Connect(ctx, r.victimDSN) // the tables' owner
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, `ALTER TABLE cluster_leadership_members ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant ON cluster_leadership_members USING (grp = current_setting('app.tenant', true))`); err != nil {
		t.Fatal(err)
	}
	var held *tenure.HeldError
	if g, err := ec.Acquire(ctx, "jobs/0", "e", time.Minute); !(errors.As(err, &held) && held.Holder == "m") && !errors.Is(err, postgres.ErrTableShape) {
		t.Errorf("Acquire(jobs/0) beside a members table under forced row security, while m owns partition 0 with %s of its lease left = %v, %v; want a HeldError naming m or ErrTableShape", m.Sent.Add(m.TTL).Until().Round(time.Millisecond), g, err)
	}
}
