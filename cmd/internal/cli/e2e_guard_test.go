package cli

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

	"github.com/tenure-dev/tenure/cmd/internal/guard"
	"github.com/tenure-dev/tenure/internal/boottime"
)

// margin is tenure run's default --margin: the coordinator keeps a lease
// at least this long after the holder's local deadline.
const margin = time.Second

// TestGuard: what tenure run's guard guarantees, on the built binary,
// against Debian's etcd and against PostgreSQL.
func TestGuard(t *testing.T) {
	t.Parallel()
	for _, c := range guardCoords(t) {
		t.Run(c.name, func(t *testing.T) {
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
// at the last deadline it heard of, while tenure is still stopped; no write
// of the command is accepted after that deadline (in-flight ones at most
// within the --margin the coordinator still holds the lease); `tenure
// lease check` says held before, not held after.
func testGuardStopped(t *testing.T, c guardCoord) {
	res := startResource(t)
	clock := newBootClock()
	s := startSupervised(t, c.flags, "stopped", res.env(), fenceScript, "--kill-grace", "10s")
	pid, leaseFile := s.started(t)
	first := res.first(t, 20*time.Second, "from the command", func(w write) bool { return w.pid == pid })
	check := runTenure(t, nil, "lease", "check", "--lease-file", leaseFile)
	if check.code != 0 || strings.TrimSpace(check.stdout) != strconv.FormatUint(first.token, 10) {
		t.Fatalf("lease check during the term: exit %d, %q; want 0 and token %d\n%s", check.code, check.stdout, first.token, check.stderr)
	}
	js := runTenure(t, nil, "lease", "check", "--json", "--lease-file", leaseFile)
	var held leaseCheckResult
	if err := json.Unmarshal([]byte(js.stdout), &held); err != nil || js.code != 0 || !held.Held || held.Token != first.token || held.TTLLeftMs <= 0 {
		t.Fatalf("lease check --json during the term: exit %d, %q (%v); want held, token %d, time left", js.code, js.stdout, err, first.token)
	}
	s.signal(t, syscall.SIGSTOP)
	stoppedAt := boottime.Now()
	waitDead(t, pid, e2eTTL+5*time.Second, "the command of a stopped tenure")
	killedBy := boottime.Now()
	l, err := guard.ReadLease(leaseFile)
	if err != nil {
		t.Fatalf("lease file while tenure is stopped: %v", err)
	}
	if l.Live || l.Deadline > killedBy || l.Deadline < stoppedAt {
		t.Errorf("lease file %+v; want live false, deadline between the stop and the death", l)
	}
	after := runTenure(t, nil, "lease", "check", "--lease-file", leaseFile)
	if after.code != ExitError || !strings.Contains(after.stderr, "lease not held") {
		t.Errorf("lease check after the kill: exit %d, %q; want 1, lease not held", after.code, after.stderr)
	}
	var last boottime.Instant
	for _, w := range res.writesBy(pid) {
		last = max(last, clock.at(w.at))
	}
	if over := last.Sub(l.Deadline); over > margin {
		t.Errorf("a write was accepted %s after the deadline; want none past the deadline + margin", over)
	} else {
		t.Logf("%s: last accepted write %s relative to the deadline; killed %s after the stop",
			c.name, last.Sub(l.Deadline).Round(time.Millisecond), killedBy.Sub(stoppedAt).Round(time.Millisecond))
	}
	if s.exited() {
		t.Errorf("tenure exited while stopped")
	}
}

// testGuardSuspendPast: Ctrl-Z stops the command with tenure; SIGCONT
// after the deadline finds it killed, never continued; tenure campaigns
// again and runs it afresh with a greater token.
func testGuardSuspendPast(t *testing.T, c guardCoord) {
	res := startResource(t)
	s := startSupervised(t, c.flags, "tstp-past", res.env(), fenceScript, "--kill-grace", "10s")
	pid, leaseFile := s.started(t)
	first := res.first(t, 20*time.Second, "from the command", func(w write) bool { return w.pid == pid })
	s.signal(t, syscall.SIGTSTP)
	waitFor(t, 5*time.Second, "the command stopped", func() bool { return procState(pid) == 'T' || !alive(pid) })
	waitFor(t, 5*time.Second, "tenure stopped", func() bool { return procState(s.pid()) == 'T' })
	time.Sleep(200 * time.Millisecond) // in-flight writes land
	n := len(res.writesBy(pid))
	waitDead(t, pid, e2eTTL+5*time.Second, "the stopped command")
	if l, err := guard.ReadLease(leaseFile); err == nil && boottime.Now() < l.Deadline {
		t.Fatalf("command dead before its deadline: %+v", l)
	}
	s.signal(t, syscall.SIGCONT)
	next := res.first(t, 20*time.Second, "from a new term", func(w write) bool { return w.token > first.token })
	if m := len(res.writesBy(pid)); m != n {
		t.Errorf("the stopped command wrote %d times after it was stopped; want never continued", m-n)
	}
	if next.pid == pid {
		t.Errorf("the new term's writes come from the old command (pid %d)", pid)
	}
}

// testGuardSuspendWithin: Ctrl-Z then SIGCONT before the deadline: the
// command continues with the same token, and tenure renews past the
// deadline it had when stopped.
func testGuardSuspendWithin(t *testing.T, c guardCoord) {
	res := startResource(t)
	clock := newBootClock()
	s := startSupervised(t, c.flags, "tstp-within", res.env(), fenceScript, "--kill-grace", "10s")
	pid, leaseFile := s.started(t)
	first := res.first(t, 20*time.Second, "from the command", func(w write) bool { return w.pid == pid })
	s.signal(t, syscall.SIGTSTP)
	waitFor(t, 5*time.Second, "the command stopped", func() bool { return procState(pid) == 'T' })
	l, err := guard.ReadLease(leaseFile)
	if err != nil {
		t.Fatal(err)
	}
	s.signal(t, syscall.SIGCONT)
	if boottime.Now() >= l.Deadline {
		t.Skipf("the machine is too slow: SIGCONT came after the deadline")
	}
	res.first(t, 10*time.Second, "well after the old deadline", func(w write) bool {
		return w.pid == pid && w.token == first.token && clock.at(w.at) > l.Deadline.Add(e2eTTL)
	})
	s.signal(t, syscall.SIGTERM)
	s.wait(t, 15*time.Second)
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
	waitFor(t, 10*time.Second, fmt.Sprintf("a tree of %d processes", n), func() bool {
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
		waitDead(t, p.Pid, d-time.Since(began), what)
	}
	return time.Since(began)
}

// testGuardKill9: kill -9 of tenure: every descendant of the command dies,
// the forked subshell and the setsid'd grandchild's children among them.
func testGuardKill9(t *testing.T, c guardCoord) {
	s := startSupervised(t, c.flags, "kill9", nil, treeScript)
	s.started(t)
	// guard, sh, subshell, its sleep, setsid sh, sleep 300, sleep 301
	procs := treeOf(t, s.pid(), 7)
	s.signal(t, syscall.SIGKILL)
	took := allDie(t, procs, 5*time.Second, "a descendant of a SIGKILLed tenure")
	t.Logf("%s: %d processes dead %s after kill -9 of tenure", c.name, len(procs), took.Round(time.Millisecond))
}

// testGuardTermEnds: the coordinator goes away; when the term ends every
// descendant of the command dies, and tenure lives on, campaigning.
func testGuardTermEnds(t *testing.T, c guardCoord) {
	coord, proxy := c.proxied(t)
	s := startSupervised(t, coord, "term-ends", nil, treeScript)
	s.started(t)
	procs := slices.DeleteFunc(treeOf(t, s.pid(), 7), func(p guard.Proc) bool { return p.PPid == s.pid() })
	proxy.Cut()
	took := allDie(t, procs, e2eTTL+5*time.Second, "a descendant after the term ended")
	t.Logf("%s: %d processes dead %s after the coordinator was cut off", c.name, len(procs), took.Round(time.Millisecond))
	if s.exited() {
		t.Errorf("tenure exited (%d) when its term ended; want it campaigning", s.code)
	}
}

// testGuardEnv: the command gets the child-facing variables and none of
// tenure's own (the coordinator comes from the environment here); `tenure
// lease check` inside prints the token; a nested tenure run does not take
// the term's TENURE_KEY as its --key.
func testGuardEnv(t *testing.T, c guardCoord) {
	env := []string{envName(strings.TrimPrefix(c.flags[0], "--")) + "=" + c.flags[1],
		"TENURE_DIAL_TIMEOUT=5s", "TENURE_LOG_LEVEL=info", "TENURE_HOLDER=env-holder", "TENURE_E2E_KEEP=1"}
	script := `env > "$OUT.env"; "$TENURE" lease check > "$OUT.check"; echo $? >> "$OUT.check"
"$TENURE" run -- true 2> "$OUT.nested"; echo $? >> "$OUT.nested"`
	s := startSupervised(t, nil, "env", env, script)
	if code := s.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("tenure run: exit %d\n%s", code, s.err)
	}
	vars := map[string]string{}
	for _, kv := range lines(readFile(s.out + ".env")) {
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
	if got := lines(readFile(s.out + ".check")); !slices.Equal(got, []string{vars["TENURE_FENCING_TOKEN"], "0"}) {
		t.Errorf("tenure lease check inside the command: %q; want the token %s and exit 0", got, vars["TENURE_FENCING_TOKEN"])
	}
	nested := readFile(s.out + ".nested")
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
func testGuardTermBeforeKill(t *testing.T, c guardCoord) {
	coord, proxy := c.proxied(t)
	script := `trap 'echo term >> "$OUT.sig"' TERM
echo "$$ $TENURE_LEASE_FILE" > "$OUT.tmp" && mv "$OUT.tmp" "$OUT"
while :; do sleep 0.05; done`
	s := startSupervised(t, coord, "term-kill", nil, script, "--ttl", "5s", "--kill-grace", "1s")
	pid, _ := s.started(t)
	proxy.Cut()
	cut := time.Now()
	waitDead(t, pid, 5*time.Second+5*time.Second, "the command after the coordinator was cut off")
	if got := lines(readFile(s.out + ".sig")); !slices.Equal(got, []string{"term"}) {
		t.Errorf("the command's trap saw %q before it died; want one SIGTERM", got)
	}
	t.Logf("%s: command killed %s after the cut, SIGTERM first", c.name, time.Since(cut).Round(time.Millisecond))
}
