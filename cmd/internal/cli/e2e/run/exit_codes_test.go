package run

import (
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/cli"
	"github.com/tenure-dev/tenure/cmd/internal/e2e"
	"github.com/tenure-dev/tenure/etcd"
	"github.com/tenure-dev/tenure/internal/etcdbin"
	"github.com/tenure-dev/tenure/internal/pgtest"
)

// TestExitCodesRun: tenure run's own failures have codes of their own: a
// command that exits 1 ("false") exits 1, and a coordinator that cannot be
// reached exits 69 (EX_UNAVAILABLE), never 1.
func TestExitCodesRun(t *testing.T) {
	t.Parallel()
	s := e2e.StartServer(t, t.TempDir())
	res := e2e.RunTenure(t, nil, "run", "--endpoints", s.Endpoint, "--key", "exit-false", "--", "false")
	if res.Code != 1 {
		t.Errorf("%s: exit %d; want 1, the command's own code\n%s", res.Description, res.Code, res.Stderr)
	}
	res = e2e.RunTenure(t, nil, "--dial-timeout", "1s", "--endpoints", "http://"+e2e.ClosedPort(t), "run", "--key", "exit-down", "--", "true")
	if res.Code != cli.ExitUnavailable || res.Code == 1 {
		t.Errorf("%s: exit %d; want %d (the coordinator is unavailable), a code no command's failure is mistaken for\n%s",
			res.Description, res.Code, cli.ExitUnavailable, res.Stderr)
	}
	help := e2e.RunTenure(t, nil, "run", "--help").Stdout
	for _, want := range []string{"  69   the coordinator could not be reached", "  70   tenure itself failed"} {
		if !strings.Contains(help, want) {
			t.Errorf("tenure run --help does not list %q", want)
		}
	}
}

// awaitOutput waits up to d for p's stdout or stderr to contain want.
func awaitOutput(t *testing.T, p *e2e.Proc, want string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !strings.Contains(p.Out.String()+p.Err.String(), want) {
		if p.Exited() || time.Now().After(deadline) {
			t.Fatalf("%s never printed %q (exit %d)\nstdout:\n%s\nstderr:\n%s", p.Name, want, p.Code, p.Out, p.Err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestExitCodeBadFlag: a flag with a bad value is a usage error (2),
// named, found before anything is dialled.
func TestExitCodeBadFlag(t *testing.T) {
	t.Parallel()
	res := e2e.RunTenure(t, nil, "--endpoints", "http://"+e2e.ClosedPort(t), "run", "--key", "k", "--ttl", "ten", "--", "true")
	if res.Code != cli.ExitUsage || !strings.Contains(res.Stderr, "--ttl") {
		t.Errorf("%s: exit %d; want %d naming --ttl\n%s", res.Description, res.Code, cli.ExitUsage, res.Stderr)
	}
}

// TestExitCodePostgresUnknownParameter: a DSN parameter PostgreSQL does
// not know (sslmod, for sslmode) is a configuration error (78, EX_CONFIG),
// not "unavailable, try again" (69).
func TestExitCodePostgresUnknownParameter(t *testing.T) {
	t.Parallel()
	srv := e2e.Postgres(t)
	dsn := pgtest.WithParams(srv.NewDatabase(t), map[string]string{"sslmod": "disable"})
	res := e2e.RunTenure(t, nil, "--postgres", dsn, "run", "--key", "k", "--", "true")
	if res.Code != cli.ExitConfig || !strings.Contains(res.Stderr, `"sslmod"`) || !strings.Contains(res.Stderr, "check its spelling") {
		t.Errorf("%s: exit %d; want %d naming sslmod\n%s", res.Description, res.Code, cli.ExitConfig, res.Stderr)
	}
}

// TestExitCodePostgresRefusedRole: a role PostgreSQL refuses to log in
// (here: none of that name; the test server trusts every password) is a
// permission error (77, EX_NOPERM).
func TestExitCodePostgresRefusedRole(t *testing.T) {
	t.Parallel()
	srv := e2e.Postgres(t)
	dsn := pgtest.WithParams(srv.DSN(), map[string]string{"user": "tenure_no_such_role"})
	res := e2e.RunTenure(t, nil, "--postgres", dsn, "run", "--key", "k", "--", "true")
	if res.Code != cli.ExitNoPerm || !strings.Contains(res.Stderr, "SQLSTATE 28000") {
		t.Errorf("%s: exit %d; want %d (SQLSTATE 28000)\n%s", res.Description, res.Code, cli.ExitNoPerm, res.Stderr)
	}
	if !strings.Contains(res.Stderr, "create the role") || strings.Contains(res.Stderr, "pg_hba") {
		t.Errorf("%s: the advice for a missing role is not to create it (or it blames pg_hba.conf):\n%s", res.Description, res.Stderr)
	}
}

// TestExitCodePostgresNoPrivilege: a role without the privileges tenure
// needs is a permission error (77, EX_NOPERM).
func TestExitCodePostgresNoPrivilege(t *testing.T) {
	t.Parallel()
	srv := e2e.Postgres(t)
	dsn, _ := srv.NewRole(t, srv.NewDatabase(t))
	res := e2e.RunTenure(t, nil, "--postgres", dsn, "run", "--key", "k", "--", "true")
	if res.Code != cli.ExitNoPerm || !strings.Contains(res.Stderr, "SQLSTATE 42501") {
		t.Errorf("%s: exit %d; want %d (SQLSTATE 42501)\n%s", res.Description, res.Code, cli.ExitNoPerm, res.Stderr)
	}
}

// TestExitCodePartitionsMismatch: --partitions other than the group's
// live members announce is a configuration error (78, EX_CONFIG).
func TestExitCodePartitionsMismatch(t *testing.T) {
	t.Parallel()
	ep := etcdbin.Start(t)
	ctx := e2e.CtxFor(t, time.Minute)
	c, err := etcd.Dial(ctx, etcd.Config{Endpoints: []string{ep}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.JoinGroup(ctx, "pm", "m1#1", time.Minute, 8); err != nil {
		t.Fatal(err)
	}
	res := e2e.RunTenure(t, nil, "--endpoints", ep, "run", "--key", "pm", "--partitions", "4", "--ttl", e2e.TTL.String(), "--", "true")
	if res.Code != cli.ExitConfig || !strings.Contains(res.Stderr, "runs it with 8") {
		t.Errorf("%s: exit %d; want %d naming the group's 8 partitions\n%s", res.Description, res.Code, cli.ExitConfig, res.Stderr)
	}
}

// TestExitCodeRunInterrupt: SIGINT while tenure run waits for its
// coordinator exits 130, as a shell reports an interrupted program.
func TestExitCodeRunInterrupt(t *testing.T) {
	t.Parallel()
	// A port that accepts connections and never answers: the dial hangs.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	p := e2e.StartProc(t, "run", nil, "--dial-timeout", "1m", "--endpoints", "http://"+l.Addr().String(), "run", "--key", "k", "--", "true")
	time.Sleep(time.Second)
	p.Signal(t, syscall.SIGINT)
	if code := p.Wait(t, e2e.Slack); code != e2e.SignalExit(syscall.SIGINT) {
		t.Errorf("exit %d after SIGINT; want 130\n%s", code, p.Err)
	}
}

// TestExitCodeDemoInterrupt: Ctrl-C (SIGINT) during tenure demo exits 130,
// without claiming the demo timed out.
func TestExitCodeDemoInterrupt(t *testing.T) {
	t.Parallel()
	p := e2e.StartProc(t, "demo", nil, "demo", "--backend", "memory")
	awaitOutput(t, p, "1. Election", 30*time.Second)
	p.Signal(t, syscall.SIGINT)
	if code := p.Wait(t, e2e.Slack); code != e2e.SignalExit(syscall.SIGINT) {
		t.Errorf("exit %d after SIGINT; want 130\n%s", code, p.Err)
	}
	if strings.Contains(p.Err.String(), "timed out") {
		t.Errorf("stderr %q says the demo timed out; it was interrupted", p.Err)
	}
}

// TestExitCodePortInUse: a second tenure server on the ports of a first
// names the flag and exits 69 (EX_UNAVAILABLE: try again once the port
// is free).
func TestExitCodePortInUse(t *testing.T) {
	t.Parallel()
	first := e2e.StartServer(t, t.TempDir())
	res := e2e.RunTenure(t, nil, "server", "--data-dir", t.TempDir(), "--listen-client", first.Endpoint,
		"--listen-peer", "http://"+e2e.ClosedPort(t), "--http", "")
	if res.Code != cli.ExitUnavailable || !strings.Contains(res.Stderr, "--listen-client "+first.Endpoint) {
		t.Errorf("%s: exit %d; want %d naming --listen-client %s\n%s", res.Description, res.Code, cli.ExitUnavailable, first.Endpoint, res.Stderr)
	}
}
