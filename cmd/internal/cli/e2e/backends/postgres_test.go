package backends

import (
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/cli"
	"github.com/tenure-dev/tenure/cmd/internal/e2e"
	"github.com/tenure-dev/tenure/internal/pgtest"
)

// TestPostgres: tenure run, status and watch with --postgres work like the
// etcd versions. Each case has keys of its own, and they run beside each
// other, after "status and watch", which lists every key held.
func TestPostgres(t *testing.T) {
	t.Parallel()
	coord := e2e.PostgresCoord(t)

	t.Run("run", func(t *testing.T) {
		t.Parallel()
		var last uint64
		for i := range 2 {
			res := e2e.RunTenure(t, nil, append(coord, "run", "--key", "runs", "--", "sh", "-c", `printf %s "$TENURE_FENCING_TOKEN"`)...)
			if res.Code != 0 {
				t.Fatalf("%s: exit %d\n%s", res.Description, res.Code, res.Stderr)
			}
			tok, err := strconv.ParseUint(res.Stdout, 10, 64)
			if err != nil || tok <= last {
				t.Fatalf("run %d: token %q; want an integer > %d", i+1, res.Stdout, last)
			}
			last = tok
		}
	})
	t.Run("TENURE_POSTGRES", func(t *testing.T) {
		t.Parallel()
		res := e2e.RunTenure(t, []string{"TENURE_POSTGRES=" + coord[1]}, "run", "--key", "env", "--", "true")
		if res.Code != 0 || !strings.Contains(res.Stderr, "backend=postgres") {
			t.Fatalf("%s with TENURE_POSTGRES: exit %d; want 0 on postgres\n%s", res.Description, res.Code, res.Stderr)
		}
	})
	t.Run("mutual exclusion", func(t *testing.T) {
		t.Parallel()
		holder := e2e.HoldKey(t, coord, "excl", "first")
		res := e2e.RunTenure(t, nil, append(coord, "run", "--key", "excl", "--wait-timeout", "1500ms", "--", "true")...)
		if res.Code != cli.ExitNotReady || !strings.Contains(res.Stderr, "first") {
			t.Errorf("%s: exit %d; want %d naming the holder\n%s", res.Description, res.Code, cli.ExitNotReady, res.Stderr)
		}
		holder.Signal(t, syscall.SIGTERM)
		holder.Wait(t, 10*time.Second)
		res = e2e.RunTenure(t, nil, append(coord, "run", "--key", "excl", "--wait-timeout", "3s", "--", "true")...)
		if res.Code != 0 {
			t.Errorf("%s after the holder stopped: exit %d; want 0\n%s", res.Description, res.Code, res.Stderr)
		}
	})
	t.Run("status and watch", func(t *testing.T) { testStatusAndWatch(t, coord) })
	t.Run("SIGKILL failover", func(t *testing.T) { t.Parallel(); e2e.SIGKILLFailover(t, coord) })
}

// TestPostgresCauseFirst: when PostgreSQL answers a connection with an
// error, that answer comes first, with what to do, not the TLS attempt
// that preceded it; a database that does not exist is a configuration to
// fix (78), not an outage to wait out (69).
func TestPostgresCauseFirst(t *testing.T) {
	t.Parallel()
	srv := e2e.Postgres(t)
	dsn := pgtest.WithParams(srv.NewDatabase(t), map[string]string{"dbname": "tenure_no_such_db", "sslmode": "prefer"})
	res := e2e.RunTenure(t, nil, "--postgres", dsn, "status", "--key", "k")
	if res.Code != cli.ExitConfig {
		t.Fatalf("%s: exit %d; want %d\n%s", res.Description, res.Code, cli.ExitConfig, res.Stderr)
	}
	// The error's first line; the line before it names the coordinator.
	_, msg, _ := strings.Cut(res.Stderr, "tenure: ")
	first := strings.SplitN(msg, "\n", 2)[0]
	for _, w := range []string{`refused the connection: database "tenure_no_such_db" does not exist (SQLSTATE 3D000)`, "create the database"} {
		if !strings.Contains(first, w) {
			t.Errorf("first line %q; want %q", first, w)
		}
	}
	if strings.Contains(res.Stderr, "TLS") {
		t.Errorf("stderr %q mentions the TLS attempt; want the server's answer alone", res.Stderr)
	}
}
