package postgres_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/postgres"
)

// The leadership table altered in place while coordinators run. Each
// coordinator here has run its statements before the ALTER, so each
// connection prepared them against the table as it was (see the package's
// guard): PostgreSQL refuses those statements once the columns they
// return changed, and tenure checks the table again before it runs them.

// inPlaceScene is a database whose leadership table an administrator in
// New York time (admin) alters in place, while h holds k (g) on c1 and c2
// was refused k for "other": both have run statements before the ALTER.
type inPlaceScene struct {
	admin  *pgx.Conn
	c1, c2 *postgres.Coordinator
	g      tenure.Grant
}

// newInPlaceScene makes the scene; admin runs setup first.
func newInPlaceScene(t *testing.T, setup ...string) inPlaceScene {
	t.Helper()
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	s := inPlaceScene{admin: newYorkAdmin(t, dsn)}
	for _, sql := range setup {
		s.exec(t, sql)
	}
	s.c1, s.c2 = open(t, dsn), open(t, dsn)
	var err error
	if s.g, err = s.c1.Acquire(ctx, "k", "h", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := s.c2.Acquire(ctx, "k", "other", time.Minute); !isHeld(err) {
		t.Fatalf("Acquire(k, other) while h holds k = %v; want a HeldError", err)
	}
	return s
}

// exec has the administrator run sql.
func (s inPlaceScene) exec(t *testing.T, sql string) {
	t.Helper()
	if _, err := s.admin.Exec(ctxFor(t, 30*time.Second), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// TestLeadershipAlteredInPlace: the leadership table's expires_at altered
// in place to timestamp (without time zone), from a session whose
// TimeZone is west of the server's, stores every lease's end hours early.
// A coordinator opened before the ALTER must not grant a key whose lease
// has a minute left: another holder is refused with ErrTableShape, and the
// holder's renewal fails too, so that it stops before its lease record,
// which no longer says when the lease ends, is trusted.
func TestLeadershipAlteredInPlace(t *testing.T) {
	t.Parallel()
	s := newInPlaceScene(t)
	ctx := ctxFor(t, time.Minute)
	s.exec(t, `ALTER TABLE `+s.c1.Table()+` ALTER COLUMN expires_at TYPE timestamp`)
	for _, c := range []*postgres.Coordinator{s.c2, s.c1} {
		if got, err := c.Acquire(ctx, "k", "other", time.Minute); !errors.Is(err, postgres.ErrTableShape) {
			t.Errorf("Acquire(k, other) after expires_at was altered in place, while h's lease has %s left = %v, %v; want ErrTableShape",
				s.g.Sent.Add(s.g.TTL).Until().Round(time.Millisecond), got, err)
		}
	}
	if r, err := s.c1.Renew(ctx, s.g); !errors.Is(err, postgres.ErrTableShape) {
		t.Errorf("Renew(%s) after expires_at was altered in place = %v, %v; want ErrTableShape", s.g, r, err)
	}
	if _, _, err := s.c2.Leader(ctx, "k"); !errors.Is(err, postgres.ErrTableShape) {
		t.Errorf("Leader(k) after expires_at was altered in place = %v; want ErrTableShape", err)
	}
}

// TestLeadershipPrecisionAlteredInPlace: expires_at altered in place to
// timestamptz(0), which rounds each lease's end to the second, up to half a
// second before its holder's deadline: the coordinators that ran their
// statements before refuse to grant and to renew.
func TestLeadershipPrecisionAlteredInPlace(t *testing.T) {
	t.Parallel()
	s := newInPlaceScene(t)
	ctx := ctxFor(t, time.Minute)
	s.exec(t, `ALTER TABLE `+s.c1.Table()+` ALTER COLUMN expires_at TYPE timestamptz(0)`)
	if got, err := s.c2.Acquire(ctx, "k2", "other", time.Minute); !errors.Is(err, postgres.ErrTableShape) {
		t.Errorf("Acquire(k2) after expires_at became timestamptz(0) = %v, %v; want ErrTableShape", got, err)
	}
	if r, err := s.c1.Renew(ctx, s.g); !errors.Is(err, postgres.ErrTableShape) {
		t.Errorf("Renew(%s) after expires_at became timestamptz(0) = %v, %v; want ErrTableShape", s.g, r, err)
	}
}

// TestLeadershipAlteredInPlaceToAcceptedShape: holder_id altered in place
// from text to varchar, a shape New accepts. The statements prepared
// before, on every connection of c1's pool that ran them, are refused once
// each, and tenure, having checked the table again, serves on: h renews
// and releases, and another holder is refused while h holds the key.
func TestLeadershipAlteredInPlaceToAcceptedShape(t *testing.T) {
	t.Parallel()
	s := newInPlaceScene(t)
	ctx := ctxFor(t, time.Minute)
	leaders := func() error { // on every connection of c1's pool, or most
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Go(func() {
				for range 10 {
					if _, _, err := s.c1.Leader(ctx, "k"); err != nil {
						errs[i] = err
					}
				}
			})
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	if err := leaders(); err != nil {
		t.Fatal(err)
	}
	conns := s.c1.Pool().Stat().TotalConns()
	s.exec(t, `ALTER TABLE `+s.c1.Table()+` ALTER COLUMN holder_id TYPE varchar`)
	if err := leaders(); err != nil {
		t.Errorf("Leader(k) after holder_id became varchar, on a pool whose %d connections prepared it before = %v", conns, err)
	}
	if _, err := s.c2.Acquire(ctx, "k", "other", time.Minute); !isHeld(err) {
		t.Errorf("Acquire(k, other) after holder_id became varchar, while h holds k = %v; want a HeldError", err)
	}
	g, err := s.c1.Renew(ctx, s.g)
	if err != nil {
		t.Fatalf("Renew after holder_id became varchar = %v", err)
	}
	if err := s.c1.Release(ctx, g); err != nil {
		t.Fatalf("Release after holder_id became varchar = %v", err)
	}
	if _, err := s.c2.Acquire(ctx, "k", "other", time.Minute); err != nil {
		t.Errorf("Acquire(k, other) after h released = %v", err)
	}
}

// TestLeadershipHolderCollationAlteredInPlace: holder_id altered in place
// to a case-insensitive collation, under which "H" is "h": a coordinator
// that ran its statements before must not grant h's live key to H.
func TestLeadershipHolderCollationAlteredInPlace(t *testing.T) {
	t.Parallel()
	s := newInPlaceScene(t, `CREATE COLLATION case_insensitive (provider = icu, locale = 'und-u-ks-level2', deterministic = false)`)
	ctx := ctxFor(t, time.Minute)
	if _, err := s.c2.Acquire(ctx, "k", "H", time.Minute); !isHeld(err) {
		t.Fatalf("Acquire(k, H) while h holds k = %v; want a HeldError", err)
	}
	s.exec(t, `ALTER TABLE `+s.c1.Table()+` ALTER COLUMN holder_id TYPE text COLLATE case_insensitive`)
	if got, err := s.c2.Acquire(ctx, "k", "H", time.Minute); !errors.Is(err, postgres.ErrTableShape) {
		t.Errorf("Acquire(k, H) after holder_id became case-insensitive, while h holds k = %v, %v; want ErrTableShape", got, err)
	}
}

// TestLeadershipAlteredInPlaceClaim: a single-key holder of jobs/5 (a key
// that names partition 5 of group jobs); the leadership table's expires_at
// altered in place as in TestLeadershipAlteredInPlace; a member of jobs
// that claims partition 5 must not be granted it while the single key's
// lease has a minute left.
func TestLeadershipAlteredInPlaceClaim(t *testing.T) {
	t.Parallel()
	s := newGroupTablesScene(t)
	ctx := ctxFor(t, time.Minute)
	g, err := s.ec.Acquire(ctx, "jobs/5", "e", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.admin.Exec(ctx, `ALTER TABLE cluster_leadership ALTER COLUMN expires_at TYPE timestamp`); err != nil {
		t.Fatal(err)
	}
	res, err := s.mc.ClaimPartitions(ctx, s.m, []string{"5"})
	if err == nil && res[0].Err == nil {
		t.Errorf("ClaimPartitions(m, 5) after expires_at was altered in place, while e holds jobs/5 with %s left = %+v; want an error",
			g.Sent.Add(g.TTL).Until().Round(time.Millisecond), res[0])
	}
	if err != nil && !errors.Is(err, postgres.ErrTableShape) {
		t.Errorf("ClaimPartitions(m, 5) after expires_at was altered in place = %v; want ErrTableShape", err)
	}
}

// isHeld reports whether err says another holder has the key.
func isHeld(err error) bool {
	var held *tenure.HeldError
	return errors.As(err, &held)
}
