package postgres_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/pgtest"
	"github.com/tenure-dev/tenure/internal/tcpproxy"
	"github.com/tenure-dev/tenure/postgres"
)

// TestLateStatementsOnPostgres: a holds the key; then a's
// requests take 3.5s to cross the network while it sends a renewal and a
// release of its grant and another acquisition, all abandoned after 1s
// (pgx's cancel requests, sent then, arrive 3.5s later too, a second after
// the statements have run). a's lease expires and b's Elector takes the key.
// The server runs a's old statements after b's grant. They must not touch
// b's lease: b's term goes on, its renewals answered, and the row stays
// b's. The control run, where b resigns before they arrive, shows that the
// abandoned statements do run: a's acquisition, long after a gave up on
// it, grants the free key to a.
func TestLateStatementsOnPostgres(t *testing.T) {
	t.Parallel()
	for _, bResigns := range []bool{false, true} {
		name := "b holds the key"
		if bResigns {
			name = "control: b resigns first"
		}
		t.Run(name, func(t *testing.T) {
			dsn := newDB(t)
			p, viaProxy := proxied(t, dsn)
			// Each statement in one round trip (as behind PgBouncer), so
			// that an abandoned one is whole in the network, not waiting
			// for its Parse to be answered; one pool of one connection per
			// statement, each used just before, so that none is pinged
			// first (pgxpool pings a connection idle for a second).
			viaProxy = pgtest.WithParams(viaProxy, map[string]string{"default_query_exec_mode": "exec", "pool_max_conns": "1"})
			db := newPool(t, dsn)
			o := &pgOracle{db: db, ttl: oracleConfig("").TTL}
			ca := [3]*postgres.Coordinator{open(t, viaProxy), open(t, viaProxy), open(t, viaProxy)}
			ctx := ctxFor(t, 30*time.Second)
			ttl := oracleConfig("").TTL
			ga, err := ca[0].Acquire(ctx, oracleKey, "a#1", ttl)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range ca[1:] {
				if _, _, err := c.Leader(ctx, oracleKey); err != nil {
					t.Fatal(err)
				}
			}
			sent := time.Now()
			p.SetLatency(tcpproxy.Up, 3500*time.Millisecond)
			var late sync.WaitGroup
			abandon := func(f func(ctx context.Context) error) {
				late.Go(func() {
					actx, cancel := context.WithTimeout(ctx, time.Second)
					defer cancel()
					if err := f(actx); err == nil {
						t.Errorf("a call through the held link succeeded")
					}
				})
			}
			abandon(func(ctx context.Context) error { _, err := ca[0].Renew(ctx, ga); return err })
			abandon(func(ctx context.Context) error { return ca[1].Release(ctx, ga) })
			abandon(func(ctx context.Context) error { _, err := ca[2].Acquire(ctx, oracleKey, "a#1", ttl); return err })
			late.Wait()

			stopB := runElector(t, open(t, dsn), oracleConfig("b"), o.lead("b", nil))
			waitUntil(t, 10*time.Second, "b leads", func() bool { return len(o.termsOf("b")) > 0 })
			if bResigns {
				stopB()
			}
			before, err := readLease(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			if time.Since(sent) > 3400*time.Millisecond {
				t.Fatalf("b led only %s after a's statements were sent; want before they arrive (3.5s)", time.Since(sent))
			}
			time.Sleep(time.Until(sent.Add(5500 * time.Millisecond))) // they have arrived and run
			after, err := readLease(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			stopB()
			t.Logf("terms:\n%s\nrow before a's late statements ran: %s token %d; after: %s token %d", o.describe(), before.holder, before.token, after.holder, after.token)
			if v := o.violations(); len(v) > 0 {
				t.Fatalf("violations:\n  %s", strings.Join(v, "\n  "))
			}
			if bResigns {
				if after.holder != "a#1" || after.token <= before.token {
					t.Fatalf("control: row after a's late statements ran = %s token %d; want a#1 granted a token above %d (the late acquisition)",
						after.holder, after.token, before.token)
				}
				return
			}
			b := o.termsOf("b")
			if len(b) != 1 || errors.Is(b[0].cause, tenure.ErrLost) {
				t.Fatalf("b's term did not survive a's late statements: %d terms, cause %v", len(b), b[len(b)-1].cause)
			}
			if after.token != b[0].token || !after.expires.Time.After(after.now) {
				t.Fatalf("row after a's late statements: %s token %d, expires %s (now %s); want b's token %d, live",
					after.holder, after.token, after.expires.Time, after.now, b[0].token)
			}
		})
	}
}
