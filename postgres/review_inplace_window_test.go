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
			c := openTraced(t, s.dsn(t), h)
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
	alter := func(typ string) { s.alterMembersExpiry(t, typ) }
	h := &alterHook{marker: "USING gone", at: beforeSend, fire: func() { alter("timestamp") }}
	hc := openTraced(t, s.ec.Pool().Config().ConnString(), h)
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
	alter := func(typ string) { s.alterMembersExpiry(t, typ) }
	h := &alterHook{marker: "FOR SHARE OF m", at: beforeSend, fire: func() { alter("timestamp") }}
	hc := openTraced(t, s.ec.Pool().Config().ConnString(), h)
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

// TestReviewInPlaceClaimTransaction: e holds jobs/5 as a single key for a
// minute; member m claims partition 5. Just before the claim's
// transaction checks m's membership (after it checked the tables' shape
// again), an administrator starts to make the leadership table's
// expires_at timestamp, and the claim goes on once the ALTER has
// committed or waits for a lock. The administrator runs New York time
// beside sessions in UTC (the ALTER rewrites the table, which hides its
// rows from the claim's snapshot), or UTC beside sessions in Berlin time
// (no rewrite: PostgreSQL keeps the rows, and each lease's end, read in
// Berlin time, is an hour early). The claim must not take partition 5
// while e's lease has a minute left.
func TestReviewInPlaceClaimTransaction(t *testing.T) {
	t.Parallel()
	for name, setup := range map[string]string{
		"New York beside UTC": "",
		"UTC beside Berlin": `DO $$BEGIN EXECUTE pg_catalog.format('ALTER DATABASE %I SET TimeZone = ''Europe/Berlin''', current_database()); END$$;
SET TimeZone = 'UTC'`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			claimWhileAltered(t, setup)
		})
	}
}

// claimWhileAltered is TestReviewInPlaceClaimTransaction after the
// administrator ran setup.
func claimWhileAltered(t *testing.T, setup string) {
	s := newGroupTablesScene(t)
	ctx := ctxFor(t, time.Minute)
	g, err := s.ec.Acquire(ctx, "jobs/5", "e", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if setup != "" {
		if _, err := s.admin.Exec(ctx, setup); err != nil {
			t.Fatal(err)
		}
	}
	altered := make(chan error, 1)
	h := &alterHook{marker: "SELECT true FROM", at: beforeSend, fire: func() {
		go func() {
			_, err := s.admin.Exec(ctx, `ALTER TABLE cluster_leadership ALTER COLUMN expires_at TYPE timestamp`)
			altered <- err
		}()
		waitAlteredOrWaiting(ctx, t, s.ec.Pool(), altered)
	}}
	hc := openTraced(t, s.ec.Pool().Config().ConnString(), h)
	res, err := hc.ClaimPartitions(ctx, s.m, []string{"5"})
	t.Logf("ClaimPartitions(m, 5) with the leadership table altered inside its transaction = %+v, %v", res, err)
	if err == nil && res[0].Err == nil {
		t.Errorf("ClaimPartitions(m, 5), the leadership table's expires_at altered in place inside the claim's transaction, while e holds jobs/5 (token %d) with %s left = token %d; want an error",
			g.Token, g.Sent.Add(g.TTL).Until().Round(time.Millisecond), res[0].Grant.Token)
	}
	if err := <-altered; err != nil {
		t.Fatal(err)
	}
}

// waitAlteredOrWaiting waits until the ALTER reported on altered has
// ended (and puts its result back) or waits for a lock.
func waitAlteredOrWaiting(ctx context.Context, t *testing.T, pool *pgxpool.Pool, altered chan error) {
	t.Helper()
	for {
		select {
		case err := <-altered:
			altered <- err
			return
		case <-time.After(10 * time.Millisecond):
		}
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
WHERE wait_event_type = 'Lock' AND strpos(query, 'ALTER TABLE') > 0`).Scan(&n); err != nil {
			t.Errorf("read pg_stat_activity: %v", err)
			return
		}
		if n > 0 {
			return
		}
	}
}

// alterMembersExpiry has the scene's administrator make the members
// table's expires_at of type typ, in place.
func (s groupTablesScene) alterMembersExpiry(t *testing.T, typ string) {
	t.Helper()
	if _, err := s.admin.Exec(ctxFor(t, 30*time.Second), `ALTER TABLE cluster_leadership_members ALTER COLUMN expires_at TYPE `+typ); err != nil {
		t.Fatal(err)
	}
}
