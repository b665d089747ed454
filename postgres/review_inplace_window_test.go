package postgres_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-dev/tenure/postgres"
)

// Attacks of review-pgguard on the windows between two statements of one
// operation: a pgx tracer on a coordinator's pool runs an administrator's
// ALTER once, just as a connection finishes preparing a statement, or
// just before it sends one, whose SQL contains a marker.

// alterHook is a pgx tracer that calls fire once, the first time a
// statement whose SQL contains marker is at point at: about to be
// prepared (Conn.Prepare), just prepared, or about to be sent.
type alterHook struct {
	marker string
	at     hookPoint
	fire   func()
	once   sync.Once
}

type hookPoint string

const (
	beforePrepare hookPoint = "just before its connection prepares it"
	afterPrepare  hookPoint = "just after its connection prepared it"
	beforeSend    hookPoint = "just before it is sent"
)

func (h *alterHook) hit(sql string) {
	if strings.Contains(sql, h.marker) {
		h.once.Do(h.fire)
	}
}

func (h *alterHook) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if h.at == beforeSend {
		h.hit(d.SQL)
	}
	return ctx
}

func (h *alterHook) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (h *alterHook) TracePrepareStart(ctx context.Context, _ *pgx.Conn, d pgx.TracePrepareStartData) context.Context {
	if h.at == beforePrepare {
		h.hit(d.SQL)
	}
	return context.WithValue(ctx, h, d.SQL)
}

func (h *alterHook) TracePrepareEnd(ctx context.Context, _ *pgx.Conn, d pgx.TracePrepareEndData) {
	if sql, ok := ctx.Value(h).(string); ok && d.Err == nil && h.at == afterPrepare {
		h.hit(sql)
	}
}

// openHooked opens a coordinator on a pool of its own, traced by h.
func openHooked(t *testing.T, dsn string, h *alterHook) *postgres.Coordinator {
	t.Helper()
	ctx := ctxFor(t, 30*time.Second)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.Tracer = h
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	c, err := postgres.New(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// acquireMarker is a piece of the SQL of a plain key's acquisition only.
const acquireMarker = "RETURNING fencing_token, "

// TestReviewInPlaceGuardWindows: h holds k. A new coordinator Acquires k
// for "other" while an administrator (New York time) makes expires_at
// timestamp, at one of three points of the acquisition's first run on a
// connection: just before the guard prepares it, just after (before the
// guard's check of the table), or just before it is sent (after the
// check). k must not be granted: ErrTableShape.
func TestReviewInPlaceGuardWindows(t *testing.T) {
	t.Parallel()
	for _, at := range []hookPoint{beforePrepare, afterPrepare, beforeSend} {
		t.Run(string(at), func(t *testing.T) {
			t.Parallel()
			s := newInPlaceScene(t)
			var fired bool
			h := &alterHook{marker: acquireMarker, at: at, fire: func() {
				s.exec(t, `ALTER TABLE `+s.c1.Table()+` ALTER COLUMN expires_at TYPE timestamp`)
				fired = true
			}}
			c := openHooked(t, s.dsn(t), h)
			g, err := c.Acquire(ctxFor(t, time.Minute), "k", "other", time.Minute)
			if !fired {
				t.Fatalf("the ALTER never ran: no statement containing %q was %s", acquireMarker, at)
			}
			if !errors.Is(err, postgres.ErrTableShape) {
				t.Errorf("Acquire(k, other) with expires_at altered in place %s, while h holds k with %s left = %v, %v; want ErrTableShape",
					at, s.g.Sent.Add(s.g.TTL).Until().Round(time.Millisecond), g, err)
			}
		})
	}
}

// dsn is the scene's database.
func (s inPlaceScene) dsn(t *testing.T) string {
	t.Helper()
	return s.c1.Pool().Config().ConnString()
}

// TestReviewInPlaceReapAfterShapeCheck: m owns partition 0 of jobs for a
// minute. A claim of partition 0 for member m2 checks the group tables'
// shape (beginGroup), then deletes the group's expired memberships in a
// statement of its own; just before that statement is sent, an
// administrator (New York time) makes the members table's expires_at
// timestamp, which stores every membership's end five hours early. Once
// the claim has answered, the administrator makes it timestamptz again,
// from the same session, which restores every end exactly. A member m3
// that joins then must not be granted partition 0 while m's lease has a
// minute left.
func TestReviewInPlaceReapAfterShapeCheck(t *testing.T) {
	t.Parallel()
	s := newGroupTablesScene(t)
	ctx := ctxFor(t, time.Minute)
	alter := func(typ string) {
		if _, err := s.admin.Exec(ctx, `ALTER TABLE cluster_leadership_members ALTER COLUMN expires_at TYPE `+typ); err != nil {
			t.Fatal(err)
		}
	}
	h := &alterHook{marker: "USING gone", at: beforeSend, fire: func() { alter("timestamp") }}
	hc := openHooked(t, s.ec.Pool().Config().ConnString(), h)
	m2 := join(ctx, t, s.ec, "m2")
	res, err := hc.ClaimPartitions(ctx, m2, []string{"0"})
	t.Logf("ClaimPartitions(m2, 0) with the members table altered just before its reaping = %+v, %v", res, err)
	alter("timestamptz")
	m3 := join(ctx, t, s.ec, "m3")
	res, err = s.ec.ClaimPartitions(ctx, m3, []string{"0"})
	if err == nil && res[0].Err == nil {
		t.Errorf("ClaimPartitions(m3, 0) after the ALTER there and back, while m (epoch %d) owns partition 0 with %s of its lease left = token %d; want an error",
			s.m.Epoch, s.m.Sent.Add(s.m.TTL).Until().Round(time.Millisecond), res[0].Grant.Token)
	}
}

// TestReviewInPlaceOwnerAfterShapeCheck: m owns partition 0 of jobs for a
// minute. An Elector's Acquire of jobs/0 checks the tables' shape in one
// statement (acquireUnlessGroups), then reads the partition's owner in
// the next (acquirePartition), and clears an owner whose membership has
// ended; just before that statement is sent, an administrator (New York
// time) makes the members table's expires_at timestamp, which stores
// every membership's end five hours early. Once the Acquire has answered,
// the administrator makes it timestamptz again, from the same session,
// which restores every end exactly. No Acquire of jobs/0 may be granted
// while m's lease has a minute left.
func TestReviewInPlaceOwnerAfterShapeCheck(t *testing.T) {
	t.Parallel()
	s := newGroupTablesScene(t)
	ctx := ctxFor(t, time.Minute)
	alter := func(typ string) {
		if _, err := s.admin.Exec(ctx, `ALTER TABLE cluster_leadership_members ALTER COLUMN expires_at TYPE `+typ); err != nil {
			t.Fatal(err)
		}
	}
	h := &alterHook{marker: "FOR SHARE OF m", at: beforeSend, fire: func() { alter("timestamp") }}
	hc := openHooked(t, s.ec.Pool().Config().ConnString(), h)
	for i, c := range []*postgres.Coordinator{hc, s.ec} {
		g, err := c.Acquire(ctx, "jobs/0", "e", time.Minute)
		if err == nil {
			t.Errorf("Acquire(jobs/0) #%d, the members table altered in place just before the partition's owner was read, and back after the first, while m (epoch %d) owns partition 0 with %s of its lease left = token %d; want an error",
				i+1, s.m.Epoch, s.m.Sent.Add(s.m.TTL).Until().Round(time.Millisecond), g.Token)
		}
		t.Logf("Acquire(jobs/0) #%d = %v", i+1, err)
		if i == 0 {
			alter("timestamptz")
		}
	}
}
