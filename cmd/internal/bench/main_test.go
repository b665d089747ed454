package bench

import (
	"context"
	"os"
	"testing"

	"github.com/tenure-dev/tenure/internal/leakcheck"
	"github.com/tenure-dev/tenure/internal/pgtest"
	"github.com/tenure-dev/tenure/internal/raceexit"
)

// pg is the test binary's PostgreSQL server, set by TestMain.
var pg struct {
	srv *pgtest.Server
	err error
}

type testMain struct{ m *testing.M }

func (r testMain) Run() int {
	return pgtest.Main(r.m, func(s *pgtest.Server, err error) { pg.srv, pg.err = s, err })
}

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(RunChild(context.Background(), spec, os.Stdout))
	}
	raceexit.Quick() // this binary, run again as a child, exits at once
	leakcheck.VerifyTestMain(testMain{m})
}

// etcdTarget starts an embedded etcd for t and returns a target on it.
func etcdTarget(t *testing.T) Target {
	t.Helper()
	s, err := StartEtcd(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return Target{Endpoints: s.Endpoints(), Progress: testWriter{t}}
}

// pgTarget returns a target on a fresh database of the test server.
func pgTarget(t *testing.T) Target {
	t.Helper()
	dsn := pgtest.Need(t, pg.srv, pg.err).NewDatabase(t)
	return Target{Postgres: dsn, Progress: testWriter{t}}
}

// testWriter writes progress to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
