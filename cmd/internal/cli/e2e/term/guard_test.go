package term

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/cli"
	"github.com/tenure-dev/tenure/cmd/internal/e2e"
	"github.com/tenure-dev/tenure/cmd/internal/guard"
	"github.com/tenure-dev/tenure/internal/boottime"
)

// margin is tenure run's default --margin: the coordinator keeps a lease
// at least this long after the holder's local deadline.
const margin = time.Second

// TestGuard: what tenure run's guard guarantees, on the built binary,
// against Debian's etcd and against PostgreSQL (the two at once).
func TestGuard(t *testing.T) {
	t.Parallel()
	for _, c := range e2e.GuardCoords(t) {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel() // the coordinators are apart; each one's cases run one after another
			t.Run("stopped tenure", func(t *testing.T) { testGuardStopped(t, c) })
			t.Run("ctrl-z past the deadline", func(t *testing.T) { testGuardSuspendPast(t, c) })
			t.Run("ctrl-z within the deadline", func(t *testing.T) { testGuardSuspendWithin(t, c) })
			t.Run("kill -9", func(t *testing.T) { testGuardKill9(t, c) })
			t.Run("term ends", func(t *testing.T) { testGuardTermEnds(t, c) })
			t.Run("TERM before KILL", func(t *testing.T) { testGuardTermBeforeKill(t, c) })
			t.Run("stall visible", func(t *testing.T) { testGuardStallVisible(t, c) })
			t.Run("default grace", func(t *testing.T) { testGuardDefaultGrace(t, c) })
			t.Run("environment", func(t *testing.T) { testGuardEnv(t, c) })
		})
	}
}

// testGuardStopped: kill -STOP of tenure alone. The guard kills the command
// just before the last deadline it heard of (guard.KillAt), while tenure
// is still stopped; no write
// of the command is accepted after that deadline (in-flight ones at most
// within the --margin the coordinator still holds the lease); `tenure
// lease check` says held before, not held after.
func testGuardStopped(t *testing.T, c e2e.GuardCoord) {
	res := e2e.StartResource(t)
	clock := e2e.NewBootClock()
	s := e2e.StartSupervised(t, c.Flags, "stopped", res.Env(), e2e.FenceScript, "--kill-grace", "10s")
	pid, leaseFile, first := s.Writing(t, res)
	check := e2e.RunTenure(t, nil, "lease", "check", "--lease-file", leaseFile)
	if check.Code != 0 || strings.TrimSpace(check.Stdout) != strconv.FormatUint(first.Token, 10) {
		t.Fatalf("lease check during the term: exit %d, %q; want 0 and token %d\n%s", check.Code, check.Stdout, first.Token, check.Stderr)
	}
	js := e2e.RunTenure(t, nil, "lease", "check", "--json", "--lease-file", leaseFile)
	var held struct { // tenure lease check --json
		Held      bool   `json:"held"`
		Token     uint64 `json:"token"`
		TTLLeftMs int64  `json:"ttl_left_ms"`
	}
	if err := json.Unmarshal([]byte(js.Stdout), &held); err != nil || js.Code != 0 || !held.Held || held.Token != first.Token || held.TTLLeftMs <= 0 {
		t.Fatalf("lease check --json during the term: exit %d, %q (%v); want held, token %d, time left", js.Code, js.Stdout, err, first.Token)
	}
	s.Signal(t, syscall.SIGSTOP)
	stoppedAt := boottime.Now()
	e2e.WaitDead(t, pid, e2e.TTL+5*time.Second, "the command of a stopped tenure")
	killedBy := boottime.Now()
	l, err := guard.ReadLease(leaseFile)
	if err != nil {
		t.Fatalf("lease file while tenure is stopped: %v", err)
	}
	if l.Live || guard.KillAt(l) > killedBy || l.Deadline < stoppedAt {
		t.Errorf("lease file %+v; want live false, deadline after the stop, and the kill due (%s before it) before the death", l, l.Deadline.Sub(guard.KillAt(l)))
	}
	after := e2e.RunTenure(t, nil, "lease", "check", "--lease-file", leaseFile)
	if after.Code != cli.ExitError || !strings.Contains(after.Stderr, "lease not held") {
		t.Errorf("lease check after the kill: exit %d, %q; want 1, lease not held", after.Code, after.Stderr)
	}
	var last boottime.Instant
	for _, w := range res.WritesBy(pid) {
		last = max(last, clock.At(w.At))
	}
	if over := last.Sub(l.Deadline); over > margin {
		t.Errorf("a write was accepted %s after the deadline; want none past the deadline + margin", over)
	} else {
		t.Logf("%s: last accepted write %s relative to the deadline; killed %s after the stop",
			c.Name, last.Sub(l.Deadline).Round(time.Millisecond), killedBy.Sub(stoppedAt).Round(time.Millisecond))
	}
	if s.Exited() {
		t.Errorf("tenure exited while stopped")
	}
}

// testGuardSuspendPast: Ctrl-Z stops the command with tenure; SIGCONT
// after the deadline finds it killed, never continued; tenure campaigns
// again and runs it afresh with a greater token.
func testGuardSuspendPast(t *testing.T, c e2e.GuardCoord) {
	res := e2e.StartResource(t)
	s := e2e.StartSupervised(t, c.Flags, "tstp-past", res.Env(), e2e.FenceScript, "--kill-grace", "10s")
	pid, leaseFile, first := s.Writing(t, res)
	s.Signal(t, syscall.SIGTSTP)
	e2e.WaitFor(t, 5*time.Second, "the command stopped", func() bool { return e2e.ProcState(pid) == 'T' || !e2e.Alive(pid) })
	e2e.WaitFor(t, 5*time.Second, "tenure stopped", func() bool { return e2e.ProcState(s.PID()) == 'T' })
	time.Sleep(200 * time.Millisecond) // in-flight writes land
	n := len(res.WritesBy(pid))
	e2e.WaitDead(t, pid, e2e.TTL+5*time.Second, "the stopped command")
	if l, err := guard.ReadLease(leaseFile); err == nil && boottime.Now() < guard.KillAt(l) {
		t.Fatalf("command dead before its kill was due (%s before the deadline): %+v", l.Deadline.Sub(guard.KillAt(l)), l)
	}
	s.Signal(t, syscall.SIGCONT)
	next := res.First(t, 20*time.Second, "from a new term", func(w e2e.Write) bool { return w.Token > first.Token })
	if m := len(res.WritesBy(pid)); m != n {
		t.Errorf("the stopped command wrote %d times after it was stopped; want never continued", m-n)
	}
	if next.PID == pid {
		t.Errorf("the new term's writes come from the old command (pid %d)", pid)
	}
}

// testGuardSuspendWithin: Ctrl-Z then SIGCONT before the deadline: the
// command continues with the same token, and tenure renews past the
// deadline it had when stopped.
func testGuardSuspendWithin(t *testing.T, c e2e.GuardCoord) {
	res := e2e.StartResource(t)
	clock := e2e.NewBootClock()
	s := e2e.StartSupervised(t, c.Flags, "tstp-within", res.Env(), e2e.FenceScript, "--kill-grace", "10s")
	pid, leaseFile, first := s.Writing(t, res)
	s.Signal(t, syscall.SIGTSTP)
	e2e.WaitFor(t, 5*time.Second, "the command stopped", func() bool { return e2e.ProcState(pid) == 'T' })
	l, err := guard.ReadLease(leaseFile)
	if err != nil {
		t.Fatal(err)
	}
	n := len(res.WritesBy(pid))
	s.Signal(t, syscall.SIGCONT)
	if boottime.Now() >= guard.KillAt(l) {
		// A machine slow enough that SIGCONT came after the kill was due:
		// what testGuardSuspendPast asserts holds instead.
		t.Logf("SIGCONT came %s after the kill was due: the command must be killed, never continued", boottime.Now().Sub(guard.KillAt(l)))
		e2e.WaitDead(t, pid, 5*time.Second, "the command continued after its kill was due")
		time.Sleep(200 * time.Millisecond) // in-flight writes land
		if m := len(res.WritesBy(pid)); m > n {
			t.Errorf("the command wrote %d times after SIGCONT, which came after its kill was due; want never continued", m-n)
		}
		s.Signal(t, syscall.SIGTERM)
		s.Wait(t, 15*time.Second)
		return
	}
	res.First(t, 10*time.Second, "well after the old deadline", func(w e2e.Write) bool {
		return w.PID == pid && w.Token == first.Token && clock.At(w.At) > l.Deadline.Add(e2e.TTL)
	})
	s.Signal(t, syscall.SIGTERM)
	s.Wait(t, 15*time.Second)
}

// treeScript starts a subshell (a fork without exec) that loops, and a
// grandchild in a session of its own with two children, writes "PID
// LEASE_FILE" to $OUT and waits.
const treeScript = `(while :; do sleep 1; done) &
setsid sh -c 'sleep 300 & sleep 301' &
echo "$$ $TENURE_LEASE_FILE" > "$OUT.tmp" && mv "$OUT.tmp" "$OUT"
wait`

// treeOf waits for tenure's guard and the command's tree of at least n
// processes (among them one in another session), and returns them.
func treeOf(t *testing.T, tenurePid, n int) []guard.Proc {
	t.Helper()
	var procs []guard.Proc
	e2e.WaitFor(t, 10*time.Second, fmt.Sprintf("a tree of %d processes", n), func() bool {
		var err error
		procs, err = guard.Descendants("/proc", tenurePid)
		return err == nil && len(procs) >= n
	})
	return procs
}

// allDie waits until every process of procs is dead, and says how long it
// took.
func allDie(t *testing.T, procs []guard.Proc, d time.Duration, what string) time.Duration {
	t.Helper()
	began := time.Now()
	for _, p := range procs {
		e2e.WaitDead(t, p.Pid, d-time.Since(began), what)
	}
	return time.Since(began)
}

// testGuardKill9: kill -9 of tenure: every descendant of the command dies,
// the forked subshell and the setsid'd grandchild's children among them.
func testGuardKill9(t *testing.T, c e2e.GuardCoord) {
	s := e2e.StartSupervised(t, c.Flags, "kill9", nil, treeScript)
	s.Started(t)
	// guard, sh, subshell, its sleep, setsid sh, sleep 300, sleep 301
	procs := treeOf(t, s.PID(), 7)
	s.Signal(t, syscall.SIGKILL)
	took := allDie(t, procs, 5*time.Second, "a descendant of a SIGKILLed tenure")
	t.Logf("%s: %d processes dead %s after kill -9 of tenure", c.Name, len(procs), took.Round(time.Millisecond))
}

// testGuardTermEnds: the coordinator goes away; when the term ends every
// descendant of the command dies, and tenure lives on, campaigning.
func testGuardTermEnds(t *testing.T, c e2e.GuardCoord) {
	coord, proxy := c.Proxied(t)
	s := e2e.StartSupervised(t, coord, "term-ends", nil, treeScript)
	s.Started(t)
	procs := slices.DeleteFunc(treeOf(t, s.PID(), 7), func(p guard.Proc) bool { return p.PPid == s.PID() })
	proxy.Cut()
	took := allDie(t, procs, e2e.TTL+5*time.Second, "a descendant after the term ended")
	t.Logf("%s: %d processes dead %s after the coordinator was cut off", c.Name, len(procs), took.Round(time.Millisecond))
	if s.Exited() {
		t.Errorf("tenure exited (%d) when its term ended; want it campaigning", s.Code)
	}
}

// testGuardEnv: the command gets the child-facing variables and none of
// tenure's own (the coordinator comes from the environment here); `tenure
// lease check` inside prints the token; a nested tenure run does not take
// the term's TENURE_KEY as its --key.
func testGuardEnv(t *testing.T, c e2e.GuardCoord) {
	env := []string{"TENURE_" + strings.ToUpper(strings.TrimPrefix(c.Flags[0], "--")) + "=" + c.Flags[1],
		"TENURE_DIAL_TIMEOUT=5s", "TENURE_LOG_LEVEL=info", "TENURE_HOLDER=env-holder", "TENURE_E2E_KEEP=1"}
	script := `env > "$OUT.env"; "$TENURE" lease check > "$OUT.check"; echo $? >> "$OUT.check"
"$TENURE" run -- true 2> "$OUT.nested"; echo $? >> "$OUT.nested"`
	s := e2e.StartSupervised(t, nil, "env", env, script)
	if code := s.Wait(t, 30*time.Second); code != 0 {
		t.Fatalf("tenure run: exit %d\n%s", code, s.Err)
	}
	vars := map[string]string{}
	for _, kv := range e2e.Lines(e2e.ReadFile(s.Out + ".env")) {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	for _, k := range []string{"TENURE_ENDPOINTS", "TENURE_POSTGRES", "TENURE_DIAL_TIMEOUT", "TENURE_LOG_LEVEL"} {
		if v, ok := vars[k]; ok {
			t.Errorf("the command got %s=%q; want none of tenure's own variables", k, v)
		}
	}
	for _, k := range []string{"TENURE_KEY", "TENURE_HOLDER", "TENURE_INSTANCE", "TENURE_FENCING_TOKEN", "TENURE_LEASE_TTL", "TENURE_LEASE_FILE", "TENURE_E2E_KEEP"} {
		if vars[k] == "" {
			t.Errorf("the command has no %s", k)
		}
	}
	if vars["TENURE_KEY"] != "env" || vars["TENURE_HOLDER"] != "env-holder" || vars["TENURE_LEASE_TTL"] != "2s" {
		t.Errorf("TENURE_KEY, _HOLDER, _LEASE_TTL = %q, %q, %q; want env, env-holder, 2s", vars["TENURE_KEY"], vars["TENURE_HOLDER"], vars["TENURE_LEASE_TTL"])
	}
	if got := e2e.Lines(e2e.ReadFile(s.Out + ".check")); !slices.Equal(got, []string{vars["TENURE_FENCING_TOKEN"], "0"}) {
		t.Errorf("tenure lease check inside the command: %q; want the token %s and exit 0", got, vars["TENURE_FENCING_TOKEN"])
	}
	nested := e2e.ReadFile(s.Out + ".nested")
	if !strings.Contains(nested, "--key is required") || !strings.HasSuffix(strings.TrimSpace(nested), "2") {
		t.Errorf("nested tenure run without --key: %q; want exit 2, --key is required", nested)
	}
	if _, err := os.Stat(vars["TENURE_LEASE_FILE"]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lease file after tenure exited: %v; want removed", err)
	}
}

// testGuardTermBeforeKill: when renewals fail, the command gets SIGTERM
// (--kill-grace before the deadline, once a renewal is a renew interval
// overdue), then SIGKILL at the deadline.
func testGuardTermBeforeKill(t *testing.T, c e2e.GuardCoord) {
	coord, proxy := c.Proxied(t)
	script := `trap 'echo term >> "$OUT.sig"' TERM
echo "$$ $TENURE_LEASE_FILE" > "$OUT.tmp" && mv "$OUT.tmp" "$OUT"
while :; do sleep 0.05; done`
	s := e2e.StartSupervised(t, coord, "term-kill", nil, script, "--ttl", "5s", "--kill-grace", "1s")
	pid, _ := s.Started(t)
	proxy.Cut()
	cut := time.Now()
	e2e.WaitDead(t, pid, 5*time.Second+5*time.Second, "the command after the coordinator was cut off")
	if got := e2e.Lines(e2e.ReadFile(s.Out + ".sig")); !slices.Equal(got, []string{"term"}) {
		t.Errorf("the command's trap saw %q before it died; want one SIGTERM", got)
	}
	t.Logf("%s: command killed %s after the cut, SIGTERM first", c.Name, time.Since(cut).Round(time.Millisecond))
}
