package postgres_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/tenure-dev/tenure/internal/pgtest"
	"github.com/tenure-dev/tenure/postgres"
)

// pg is the test binary's server, set once by TestMain before any test runs
// and read-only afterwards.
var pg struct {
	srv *pgtest.Server
	err error
}

// childEnv, when set, makes the test binary run as a contender process for
// TestContentionProcesses instead of running tests.
const childEnv = "TENURE_POSTGRES_TEST_CHILD"

type testMain struct{ m *testing.M }

func (r testMain) Run() int {
	if os.Getenv(childEnv) != "" {
		return runChild()
	}
	return pgtest.Main(r.m, func(s *pgtest.Server, err error) { pg.srv, pg.err = s, err })
}

// TestMain: tests with a database of their own mostly wait on leases and
// call t.Parallel (go test runs two at a time on two cores). A test that
// restarts the server, kills its sessions or counts lock waiters across it
// must not: tests that do not call t.Parallel run first, one at a time,
// with no parallel test beside them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(testMain{m})
}

// server returns the test server, or skips (fails, in CI) t.
func server(t testing.TB) *pgtest.Server {
	t.Helper()
	return pgtest.Need(t, pg.srv, pg.err)
}

// newDB returns a DSN for a fresh database, dropped when t ends.
func newDB(t testing.TB) string {
	t.Helper()
	return server(t).NewDatabase(t)
}

// ctxFor returns a context bounded by d and by t.
func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// open opens a Coordinator on dsn, closed when t ends.
func open(t testing.TB, dsn string, opts ...postgres.Option) *postgres.Coordinator {
	t.Helper()
	c, err := postgres.Dial(ctxFor(t, 30*time.Second), dsn, opts...)
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

// openTraced opens a coordinator on a pool of its own whose statements
// tracer sees.
func openTraced(t testing.TB, dsn string, tracer pgx.QueryTracer) *postgres.Coordinator {
	t.Helper()
	ctx := ctxFor(t, 30*time.Second)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.Tracer = tracer
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
