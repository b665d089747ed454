package postgres_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/pgtest"
	"github.com/tenure-dev/tenure/internal/tcpproxy"
	"github.com/tenure-dev/tenure/postgres"
)

// TestElectorFaultsOnPostgres runs a (through a proxy) and b (direct)
// Electors for one key, and injects one fault into a's link or the row
// just after a's first renewal was answered (about 600ms into its first
// term; the first run of a statement on a connection prepares it and
// checks the table, some round trips more, which on a loaded machine can
// push that renewal past 600ms and into the fault).
func TestElectorFaultsOnPostgres(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		params map[string]string // for a's DSN
		fault  func(env *faultEnv, term *tenure.Term)
		// renewals: how many of a's renewals, answered during the fault,
		// the oracle must have checked at least.
		renewals int
		// handover: a's first term must end and a later one (a's or b's:
		// both campaign) begin.
		handover bool
	}{
		{name: "replies held past the deadline", handover: true, fault: func(env *faultEnv, _ *tenure.Term) {
			env.proxy.Hold(tcpproxy.Down)
			time.Sleep(3 * time.Second)
			env.proxy.Release(tcpproxy.Down)
		}},
		{name: "connections reset every 100ms", fault: func(env *faultEnv, _ *tenure.Term) {
			for range 30 {
				env.proxy.Reset()
				time.Sleep(100 * time.Millisecond)
			}
		}},
		{name: "requests 150ms late", renewals: 2, fault: func(env *faultEnv, _ *tenure.Term) {
			env.proxy.SetLatency(tcpproxy.Up, 150*time.Millisecond)
			time.Sleep(3 * time.Second)
			env.proxy.SetLatency(tcpproxy.Up, 0)
		}},
		{name: "row locked past the expiry", handover: true, fault: func(env *faultEnv, _ *tenure.Term) {
			env.lockRow(2500 * time.Millisecond)
		}},
		{name: "row locked past the expiry, statement_timeout 250ms", handover: true,
			params: map[string]string{"options": "-c statement_timeout=250"},
			fault: func(env *faultEnv, _ *tenure.Term) {
				env.lockRow(2500 * time.Millisecond)
			}},
		{name: "row locked 300ms at a renewal", renewals: 1, fault: func(env *faultEnv, _ *tenure.Term) {
			env.lockRow(300 * time.Millisecond)
			time.Sleep(2 * time.Second)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn := newDB(t)
			p, viaProxy := proxied(t, dsn)
			if tc.params != nil {
				viaProxy = pgtest.WithParams(viaProxy, tc.params)
			}
			env := &faultEnv{t: t, proxy: p, db: newPool(t, dsn)}
			env.oracle = &pgOracle{db: env.db, ttl: oracleConfig("").TTL}
			cb := open(t, dsn) // first: creates the table, which a's statement_timeout might not allow
			ca := openPatiently(t, viaProxy)
			faultDone := make(chan struct{})
			var renewed int // a's renewals answered during the fault
			during := func(term *tenure.Term) {
				defer close(faultDone)
				for end := time.Now().Add(5 * time.Second); env.oracle.renewalsOf("a") == 0 && time.Now().Before(end); {
					time.Sleep(10 * time.Millisecond)
				}
				before := env.oracle.renewalsOf("a")
				tc.fault(env, term)
				renewed = env.oracle.renewalsOf("a") - before
			}
			stopA := runElector(t, ca, oracleConfig("a"), env.oracle.lead("a", during))
			waitUntil(t, 10*time.Second, "a leads", func() bool { return len(env.oracle.termsOf("a")) > 0 })
			stopB := runElector(t, cb, oracleConfig("b"), env.oracle.lead("b", nil))
			select {
			case <-faultDone:
			case <-time.After(30 * time.Second):
				t.Fatal("the fault did not finish within 30s")
			}
			p.Heal()
			time.Sleep(time.Second)
			stopA()
			stopB()
			if v := env.oracle.violations(); len(v) > 0 {
				t.Fatalf("terms:\n%s\nviolations:\n  %s", env.oracle.describe(), strings.Join(v, "\n  "))
			}
			t.Logf("terms:\n%s", env.oracle.describe())
			a := env.oracle.termsOf("a")
			switch {
			case tc.renewals > 0 && renewed < tc.renewals:
				t.Fatalf("%d of a's renewals answered during the fault; want %d or more", renewed, tc.renewals)
			case tc.handover && len(a)+len(env.oracle.termsOf("b")) < 2:
				t.Fatalf("no term after a's first; terms:\n%s", env.oracle.describe())
			}
		})
	}
}

// openPatiently is open, trying again while Dial's own statements are
// cancelled by a short statement_timeout the DSN sets (SQLSTATE 57014), as
// they can be on a loaded machine: the tests that set one are about the
// elector's statements, not Dial's.
func openPatiently(t *testing.T, dsn string) *postgres.Coordinator {
	t.Helper()
	for try := 1; ; try++ {
		c, err := postgres.Dial(ctxFor(t, 30*time.Second), dsn)
		var pgErr *pgconn.PgError
		if err != nil && errors.As(err, &pgErr) && pgErr.Code == "57014" && try < 10 {
			t.Logf("Dial() try %d: %v; trying again", try, err)
			continue
		}
		if err != nil {
			t.Fatalf("Dial() error = %v", err)
		}
		t.Cleanup(func() {
			if err := c.Close(); err != nil {
				t.Errorf("Close() error = %v", err)
			}
		})
		return c
	}
}
