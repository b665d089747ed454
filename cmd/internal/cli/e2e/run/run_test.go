package run

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/cli"
	"github.com/tenure-dev/tenure/cmd/internal/e2e"
	"github.com/tenure-dev/tenure/internal/boottime"
)

// status returns "tenure status --key key" as text.
func keyStatusText(t *testing.T, s *e2e.Server, key string) string {
	t.Helper()
	res := e2e.RunTenure(t, nil, "status", "--endpoints", s.Endpoint, "--key", key)
	if res.Code != 0 {
		t.Fatalf("%s: exit %d\n%s", res.Description, res.Code, res.Stderr)
	}
	return e2e.AfterCoordinatorLine(t, res.Stdout)
}

// TestRunCommand: the command's environment, its exit code as tenure's,
// and the key released as soon as it exits.
func TestRunCommand(t *testing.T) {
	t.Parallel()
	s := e2e.StartServer(t, t.TempDir())
	ep := []string{"--endpoints", s.Endpoint}
	run := func(t *testing.T, key string, command ...string) e2e.Result {
		t.Helper()
		args := append(append([]string{"run"}, ep...), "--key", key, "--holder", "h1", "--ttl", "5s", "--")
		return e2e.RunTenure(t, nil, append(args, command...)...)
	}

	t.Run("environment", func(t *testing.T) {
		res := run(t, "env/a", "sh", "-c", `printf '%s|%s|%s|%s' "$TENURE_KEY" "$TENURE_HOLDER" "$TENURE_FENCING_TOKEN" "$TENURE_LEASE_TTL"`)
		if res.Code != 0 {
			t.Fatalf("exit %d; want 0\n%s", res.Code, res.Stderr)
		}
		f := strings.Split(res.Stdout, "|")
		if len(f) != 4 || f[0] != "env/a" || e2e.NameOf(f[1]) != "h1" || f[3] != "5s" {
			t.Fatalf("command saw TENURE_KEY|HOLDER|FENCING_TOKEN|LEASE_TTL = %q; want env/a|h1|<token>|5s", res.Stdout)
		}
		first, err := strconv.ParseUint(f[2], 10, 64)
		if err != nil || first == 0 {
			t.Fatalf("TENURE_FENCING_TOKEN = %q; want a positive integer", f[2])
		}
		// Released on exit: the next run gets the key at once, with a
		// greater token.
		res = run(t, "env/a", "sh", "-c", `printf %s "$TENURE_FENCING_TOKEN"`)
		second, _ := strconv.ParseUint(res.Stdout, 10, 64)
		if second <= first {
			t.Errorf("second run's token = %d; want > %d", second, first)
		}
		if res.Took > 5*time.Second+e2e.Slack {
			t.Errorf("second run took %s; want the key released by the first (within the 5s TTL + slack)", res.Took)
		}
	})

	for _, tc := range []struct {
		name    string
		command []string
		want    int
	}{
		{"exit 0", []string{"true"}, 0},
		{"exit 7", []string{"sh", "-c", "exit 7"}, 7},
		{"killed by a signal", []string{"sh", "-c", "kill -9 $$"}, 128 + 9},
		{"not found", []string{"no-such-command-tenure-e2e"}, cli.ExitNotFound},
		{"not executable", []string{"/etc/hostname"}, cli.ExitCannotRun},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, "codes", tc.command...)
			if res.Code != tc.want {
				t.Fatalf("%s: exit %d; want %d\n%s", res.Description, res.Code, tc.want, res.Stderr)
			}
			if got := keyStatusText(t, s, "codes"); got != "codes: no leader" {
				t.Errorf("status after the command exited = %q; want %q (released at once)", got, "codes: no leader")
			}
		})
	}
}

// TestRunSignals: SIGTERM and SIGINT are forwarded to the command's group
// and tenure exits with the command's code; SIGHUP is forwarded and tenure
// carries on.
func TestRunSignals(t *testing.T) {
	t.Parallel()
	s := e2e.StartServer(t, t.TempDir())
	dir := t.TempDir()
	script := `trap 'echo got-hup >> "$OUT"' HUP
trap 'echo got-term >> "$OUT"; exit 0' TERM
trap 'echo got-int >> "$OUT"; exit 5' INT
echo started >> "$OUT"
while :; do sleep 0.05; done`
	start := func(t *testing.T, out string) *e2e.Proc {
		p := e2e.StartProc(t, "run", []string{"OUT=" + out}, "run", "--endpoints", s.Endpoint, "--key", "sig",
			"--ttl", "5s", "--", "sh", "-c", script)
		e2e.WaitFor(t, 10*time.Second, "the command to start", func() bool { return strings.Contains(e2e.ReadFile(out), "started") })
		return p
	}

	t.Run("SIGTERM", func(t *testing.T) {
		out := filepath.Join(dir, "term")
		p := start(t, out)
		p.Signal(t, syscall.SIGHUP)
		e2e.WaitFor(t, 5*time.Second, "the command to get SIGHUP", func() bool { return strings.Contains(e2e.ReadFile(out), "got-hup") })
		if p.Exited() {
			t.Fatalf("tenure exited (%d) on a SIGHUP the command handled; want it to carry on", p.Code)
		}
		p.Signal(t, syscall.SIGTERM)
		if code := p.Wait(t, 10*time.Second); code != 0 {
			t.Errorf("exit %d; want 0, the command's code after its SIGTERM trap", code)
		}
		if !strings.Contains(e2e.ReadFile(out), "got-term") {
			t.Errorf("command output %q; want got-term", e2e.ReadFile(out))
		}
		if got := keyStatusText(t, s, "sig"); got != "sig: no leader" {
			t.Errorf("status after exit = %q; want released", got)
		}
	})
	t.Run("SIGINT", func(t *testing.T) {
		out := filepath.Join(dir, "int")
		p := start(t, out)
		p.Signal(t, syscall.SIGINT)
		if code := p.Wait(t, 10*time.Second); code != 5 {
			t.Errorf("exit %d; want 5, the command's code after its SIGINT trap", code)
		}
	})
	t.Run("SIGTERM ignored", func(t *testing.T) {
		// Renewals stop when tenure resigns: a command that ignores the
		// signal is SIGKILLed at the local deadline, long before
		// --kill-grace.
		out := filepath.Join(dir, "stubborn")
		p := e2e.StartProc(t, "run", []string{"OUT=" + out}, "run", "--endpoints", s.Endpoint, "--key", "sig",
			"--ttl", e2e.TTL.String(), "--kill-grace", "30s", "--", "sh", "-c", `trap "" TERM; echo started >> "$OUT"; while :; do sleep 0.05; done`)
		e2e.WaitFor(t, 10*time.Second, "the command to start", func() bool { return strings.Contains(e2e.ReadFile(out), "started") })
		began := time.Now()
		p.Signal(t, syscall.SIGTERM)
		if code := p.Wait(t, 10*time.Second); code != 128+int(syscall.SIGKILL) {
			t.Errorf("exit %d; want %d (the command's death by SIGKILL)", code, 128+int(syscall.SIGKILL))
		}
		if took := time.Since(began); took >= e2e.TTL+e2e.Slack {
			t.Errorf("tenure exited %s after SIGTERM; want the command killed by the local deadline, within the TTL + slack (%s), long before the 30s grace", took.Round(time.Millisecond), e2e.TTL+e2e.Slack)
		}
	})
	t.Run("SIGTERM while waiting", func(t *testing.T) {
		holder := start(t, filepath.Join(dir, "holder"))
		waiter := e2e.StartProc(t, "waiter", nil, "run", "--endpoints", s.Endpoint, "--key", "sig", "--", "true")
		e2e.WaitFor(t, 10*time.Second, "the waiter to campaign", func() bool { return strings.Contains(waiter.Err.String(), "waiting") })
		waiter.Signal(t, syscall.SIGTERM)
		if code := waiter.Wait(t, 5*time.Second); code != 128+int(syscall.SIGTERM) {
			t.Errorf("waiter exit %d; want %d", code, 128+int(syscall.SIGTERM))
		}
		holder.Signal(t, syscall.SIGTERM)
		holder.Wait(t, 10*time.Second)
	})
}

// TestRunWaitTimeout: --wait-timeout gives up with exit code 3, naming the
// holder, in about that time.
func TestRunWaitTimeout(t *testing.T) {
	t.Parallel()
	s := e2e.StartServer(t, t.TempDir())
	holder := e2e.StartProc(t, "holder", nil, "run", "--endpoints", s.Endpoint, "--key", "wait", "--holder", "the-holder", "--", "sleep", "60")
	e2e.WaitFor(t, 10*time.Second, "the holder to lead", func() bool { return strings.Contains(holder.Err.String(), "command started") })

	marker := filepath.Join(t.TempDir(), "ran")
	res := e2e.RunTenure(t, nil, "run", "--endpoints", s.Endpoint, "--key", "wait", "--wait-timeout", "1s", "--", "touch", marker)
	if res.Code != cli.ExitNotReady {
		t.Fatalf("exit %d; want %d\n%s", res.Code, cli.ExitNotReady, res.Stderr)
	}
	if !strings.Contains(res.Stderr, "--wait-timeout") || !strings.Contains(res.Stderr, "the-holder") {
		t.Errorf("stderr %q; want it to name --wait-timeout and the holder", res.Stderr)
	}
	if res.Took < time.Second || res.Took > time.Second+e2e.Slack {
		t.Errorf("took %s; want 1s (the --wait-timeout) or a little more", res.Took)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran without leading")
	}
	holder.Signal(t, syscall.SIGTERM)
	if code := holder.Wait(t, 10*time.Second); code != 128+int(syscall.SIGTERM) {
		t.Errorf("holder exit %d after SIGTERM; want %d (sleep's death by SIGTERM)", code, 128+int(syscall.SIGTERM))
	}
}

// TestRunMetrics: --http serves the elector's Prometheus metrics and a
// health endpoint that says whether the node leads.
func TestRunMetrics(t *testing.T) {
	t.Parallel()
	s := e2e.StartServer(t, t.TempDir())
	p := e2e.StartProc(t, "run", nil, "run", "--endpoints", s.Endpoint, "--key", "metered", "--http", "127.0.0.1:0", "--", "sleep", "60")
	e2e.WaitFor(t, 10*time.Second, "the command to start", func() bool { return strings.Contains(p.Err.String(), "command started") })
	var addr string
	for _, f := range strings.Fields(p.Err.String()) {
		if v, ok := strings.CutPrefix(f, "http="); ok {
			addr = v
		}
	}
	if addr == "" {
		t.Fatalf("no http= address in the log:\n%s", p.Err)
	}
	code, body := e2e.Get(t, addr, "/metrics")
	for _, w := range []string{`tenure_is_leader{key="metered"} 1`, `tenure_fencing_token{key="metered"}`, `tenure_transitions_total{key="metered",reason="acquired"} 1`, "go_goroutines"} {
		if code != 200 || !strings.Contains(body, w) {
			t.Errorf("/metrics = %d without %q", code, w)
		}
	}
	if code, body := e2e.Get(t, addr, "/leader"); code != 200 || strings.TrimSpace(body) != "leader" {
		t.Errorf("/leader = %d %q; want 200 leader", code, body)
	}
	p.Signal(t, syscall.SIGTERM)
	p.Wait(t, 10*time.Second)
}

// TestRunLeftovers: processes the command leaves behind in its group are
// stopped before tenure releases the key: SIGTERM, then SIGKILL after
// --kill-grace for those that ignore it. Times are counted from the
// command's exit to tenure's, not from tenure's start: a loaded machine
// takes seconds to start tenure and win the key, which says nothing of how
// it stops.
func TestRunLeftovers(t *testing.T) {
	const exiting = `read up _ < /proc/uptime; echo "$up" > "$PIDFILE.exit"; ` // when the command exits
	t.Parallel()
	s := e2e.StartServer(t, t.TempDir())
	for _, tc := range []struct {
		name     string
		script   string
		grace    string
		atLeast  time.Duration
		atMost   time.Duration
		wantCode int
	}{
		// Killed by SIGTERM, the leftover may stay a zombie: tenure must not
		// wait for the (30s) grace to end because of it.
		{"SIGTERM suffices", `sleep 30 & echo $! > "$PIDFILE"; ` + exiting + `exit 3`, "30s", 0, e2e.Slack, 3},
		{"SIGTERM ignored", `(trap "" TERM; exec sleep 30) & echo $! > "$PIDFILE"; ` + exiting + `exit 0`, "400ms", 400 * time.Millisecond, 400*time.Millisecond + e2e.Slack, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pidfile := filepath.Join(t.TempDir(), "pid")
			res := e2e.RunTenure(t, []string{"PIDFILE=" + pidfile}, "run", "--endpoints", s.Endpoint, "--key", "leftovers",
				"--kill-grace", tc.grace, "--", "sh", "-c", tc.script)
			exited := boottime.Now()
			if res.Code != tc.wantCode {
				t.Fatalf("%s: exit %d; want %d\n%s", res.Description, res.Code, tc.wantCode, res.Stderr)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(e2e.ReadFile(pidfile)))
			if err != nil {
				t.Fatalf("pid file: %q", e2e.ReadFile(pidfile))
			}
			if e2e.Alive(pid) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("the command's background process (pid %d) outlived tenure", pid)
			}
			// The command's reading is rounded up, by less than its resolution.
			took := exited.Sub(e2e.Uptime(t, e2e.ReadFile(pidfile+".exit")))
			if took < tc.atLeast-e2e.UptimeResolution || took > tc.atMost {
				t.Errorf("tenure exited %s after the command; want between %s and %s", took.Round(time.Millisecond), tc.atLeast, tc.atMost)
			}
			t.Logf("tenure ran %s, and exited %s after the command", res.Took.Round(time.Millisecond), took.Round(time.Millisecond))
		})
	}
}
