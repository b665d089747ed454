package postgres_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenure-dev/tenure/postgres"
)

// faultHook is a pgx tracer that, once armed, calls fire the first time a
// statement whose SQL contains marker is about to be prepared (prepare)
// or sent (!prepare).
type faultHook struct {
	marker  string
	prepare bool
	fire    func()
	armed   atomic.Bool
	fired   atomic.Bool
}

func (h *faultHook) hit(sql string, prepare bool) {
	if prepare == h.prepare && h.armed.Load() && strings.Contains(sql, h.marker) && h.fired.CompareAndSwap(false, true) {
		h.fire()
	}
}

func (h *faultHook) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	h.hit(d.SQL, false)
	return ctx
}

func (h *faultHook) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (h *faultHook) TracePrepareStart(ctx context.Context, _ *pgx.Conn, d pgx.TracePrepareStartData) context.Context {
	h.hit(d.SQL, true)
	return ctx
}

func (h *faultHook) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}

// TestGuardFaultsBelowTheClient: h holds k. A coordinator in pgx's default
// mode, through a fault proxy, Acquires k for "other" on a new connection;
// at one point of the guard's first run of the acquisition there, an
// administrator (New York time) makes expires_at timestamp, which stores
// every lease's end hours early, and the proxy resets the connection: as
// the guard prepares the statement, as it sends the table's check, or as
// it sends the statement itself. That Acquire fails; the next ones, on a
// new connection, must be refused ErrTableShape, never granted.
func TestGuardFaultsBelowTheClient(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, marker string
		prepare      bool
	}{
		{"reset as the acquisition is prepared", acquireMarker, true},
		{"reset as the check is sent", "pg_get_userbyid", false}, // checkTable's first statement
		{"reset as the acquisition is sent", acquireMarker, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newInPlaceScene(t)
			ctx := ctxFor(t, time.Minute)
			p, via := proxied(t, s.dsn(t))
			h := &faultHook{marker: tc.marker, prepare: tc.prepare, fire: func() {
				s.exec(t, `ALTER TABLE `+s.c1.Table()+` ALTER COLUMN expires_at TYPE timestamp`)
				p.Reset()
			}}
			c := openTraced(t, via, h)
			h.armed.Store(true)
			left := func() time.Duration { return s.g.Sent.Add(s.g.TTL).Until().Round(time.Millisecond) }
			if g, err := c.Acquire(ctx, "k", "other", time.Minute); err == nil {
				t.Fatalf("Acquire(k, other) across the reset, while h holds k with %s left = %v; want an error", left(), g)
			}
			if !h.fired.Load() {
				t.Fatalf("the fault never came: no statement containing %q was about to be %s", tc.marker, map[bool]string{true: "prepared", false: "sent"}[tc.prepare])
			}
			for range 3 {
				if g, err := c.Acquire(ctx, "k", "other", time.Minute); !errors.Is(err, postgres.ErrTableShape) {
					t.Fatalf("Acquire(k, other) after the reset, expires_at altered in place, while h holds k with %s left = %v, %v; want ErrTableShape", left(), g, err)
				}
			}
		})
	}
}
