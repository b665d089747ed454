//go:build openfinding

// Open finding of review-pgshape (issue 34): Acquire's cached shape check
// (groupsShaped, 965f1e7) grants a key over a live member's partition
// after an ALTER of the members table in place. Run:
//
//	go test -tags openfinding -race -count=1 -run TestReviewShapeCacheAlterInPlace ./postgres/
//
// It fails while the finding is open: an administrator changes expires_at
// to timestamp (without time zone) from a session whose TimeZone is west
// of the server's, so every membership's end is stored hours early. The
// shape check names that column (ErrTableShape), and did in every Acquire
// before 965f1e7; with the cache, an Acquire of a coordinator that saw the
// tables before the ALTER reads no shape, finds the member expired, clears
// its ownership and grants the key, while the member's lease has about a
// minute left and the member has not been told: it learns at its next
// group operation. A coordinator that runs no group operation (a process
// of single keys, an Elector) keeps trusting the tables for ever: the
// docs' "refused ... by Acquire from then on" holds only for the
// coordinator whose group operation saw the shape.

package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenure-dev/tenure/internal/timing"
	"github.com/tenure-dev/tenure/postgres"
)

// TestReviewShapeCacheAlterInPlace: after an ALTER in place of the
// members table's expires_at, no Acquire grants a live member's
// partition, on the member's coordinator or on another.
func TestReviewShapeCacheAlterInPlace(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	// The server runs UTC (every coordinator's session); the administrator's
	// psql runs New York time.
	if _, err := admin.Exec(ctx, `DO $$BEGIN EXECUTE format('ALTER DATABASE %I SET TimeZone = ''UTC''', current_database()); END$$`); err != nil {
		t.Fatal(err)
	}
	mc, ec := open(t, dsn), open(t, dsn) // the member's coordinator; an Elector's
	m := join(ctx, t, mc, "m")
	if res, err := mc.ClaimPartitions(ctx, m, []string{"0", "1"}); err != nil || res[0].Err != nil || res[1].Err != nil {
		t.Fatalf("ClaimPartitions(m, 0 1) = %+v, %v", res, err)
	}
	for _, c := range []*postgres.Coordinator{mc, ec} { // each sees the tables, of tenure's shape
		g, err := c.Acquire(ctx, "jobs/9", "seen", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Release(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := admin.Exec(ctx, `SET TimeZone = 'America/New_York';
ALTER TABLE cluster_leadership_members ALTER COLUMN expires_at TYPE timestamp`); err != nil {
		t.Fatal(err)
	}
	deadline := m.Sent.Add(m.TTL - timing.MinMargin) // m's latest local deadline
	for _, a := range []struct {
		c         *postgres.Coordinator
		who, part string
	}{{ec, "another coordinator", "0"}, {mc, "the member's coordinator", "1"}} {
		g, err := a.c.Acquire(ctx, "jobs/"+a.part, "e", time.Minute)
		if left := deadline.Until(); err == nil {
			t.Errorf("Acquire(jobs/%s) on %s after the ALTER = token %d, while member m owns partition %s with %s of its lease left and has not been told: two owners", a.part, a.who, g.Token, a.part, left.Round(time.Millisecond))
		} else if !errors.Is(err, postgres.ErrTableShape) {
			t.Errorf("Acquire(jobs/%s) on %s after the ALTER = %v; want ErrTableShape", a.part, a.who, err)
		}
	}
	_, err = mc.RenewMember(ctx, m) // the member's first chance to learn
	t.Logf("m's renewal after the Acquires: %v", err)
	if _, err := ec.Acquire(ctx, "jobs/2", "e", time.Minute); !errors.Is(err, postgres.ErrTableShape) {
		t.Errorf("Acquire(jobs/2) on another coordinator after m's renewal saw the shape = %v; want ErrTableShape (docs: refused by Acquire from then on)", err)
	}
}
