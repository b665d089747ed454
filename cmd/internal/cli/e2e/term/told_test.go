package term

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
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

// toldScript is the command of TestToldNeverOutlivesGrant: it logs its
// start to $LOG at once ("UPTIME start TOKEN PID LEASE_FILE", UPTIME from
// /proc/uptime: CLOCK_BOOTTIME in seconds, to the hundredth), ignores
// SIGTERM (a renewal overdue on a loaded machine does not end it: only the
// guard's SIGKILL does), and the first command of the test also starts, in
// the background, the checker (toldChildMain's "toldcheck"). Then it
// sleeps until killed.
const toldScript = `read up _ < /proc/uptime
echo "$up start $TENURE_FENCING_TOKEN $$ $TENURE_LEASE_FILE" >> "$LOG"
trap '' TERM
if mkdir "$LOG.checker" 2>/dev/null; then TENURE_E2E_CHILD=toldcheck $WRAP "$SELF" & fi
exec sleep 3600`

// toldChildMain is childMain's mode for TestToldNeverOutlivesGrant:
//
//	toldcheck: ignore SIGTERM, SIGINT and SIGHUP, append "BOOT checker PID", then, until $LOG.stop exists
//	           (two minutes at most), ask `tenure lease check` again and
//	           again, appending "BOOT check CODE TOKEN HOW" for each answer,
//	           BOOT read before it was asked: HOW is "binary" for the built
//	           tenure ($TENURE), "main" for the same command run in this
//	           process (cli.Main, no process to start: many more answers on
//	           a loaded machine); both run at once. BOOT is on the host's
//	           boot clock (see hostBoot), wherever the checker runs
func toldChildMain(mode string) (code int, ok bool) {
	log := os.Getenv("LOG")
	switch mode {
	case "noboottime":
		return noBootTimeMain(nil), true
	case "noboottime-exec":
		return noBootTimeMain(os.Args[1:]), true
	case "toldcheck":
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
		if code := toldAppend(log, "checker %d", os.Getpid()); code != 0 {
			return code, true
		}
		done := make(chan int)
		go func() { done <- toldCheckLoop(log, "binary") }()
		code := toldCheckLoop(log, "main")
		return max(code, <-done), true
	}
	return 0, false
}

// toldCheckLoop asks lease check (how: "binary" or "main") and logs each
// answer until $LOG.stop exists, two minutes at most.
func toldCheckLoop(log, how string) int {
	for began := time.Now(); time.Since(began) < 2*time.Minute; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(log + ".stop"); err == nil {
			return 0
		}
		at := hostBoot()
		var out bytes.Buffer
		code := 0
		if how == "main" {
			code = cli.Main(context.Background(), []string{"lease", "check"}, nil, &out, io.Discard)
		} else {
			cmd := exec.Command(os.Getenv("TENURE"), "lease", "check")
			cmd.Stdout = &out
			if err := cmd.Run(); err != nil {
				code = -1
				if ee, ok := err.(*exec.ExitError); ok {
					code = ee.ExitCode()
				}
			}
		}
		token := strings.TrimSpace(out.String())
		if token == "" {
			token = "0"
		}
		if err := appendLine(log, fmt.Sprintf("%d check %d %s %s\n", at, code, token, how)); err != nil {
			return 1
		}
	}
	return 0
}

// toldAppend appends "BOOT " and the formatted line to log; 1 if it cannot.
func toldAppend(log, format string, args ...any) int {
	if err := appendLine(log, fmt.Sprintf("%d "+format+"\n", append([]any{hostBoot()}, args...)...)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// appendLine appends line to the file at path in one write (O_APPEND: the
// writers' lines never interleave).
func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// toldLog is what the commands and the checker logged.
type toldLog struct {
	starts  []toldStart
	checks  []toldCheck
	checker int // the checker's pid
}

type toldStart struct {
	at    boottime.Instant
	token uint64
	pid   int
	file  string
}

type toldCheck struct {
	at    boottime.Instant // read before lease check was asked
	code  int
	token uint64
	how   string // "binary" or "main" (see toldChildMain)
}

func readToldLog(t *testing.T, path string) toldLog {
	t.Helper()
	var l toldLog
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	// Only whole lines: a writer may be part-way through the last one.
	text := string(b)
	text = text[:strings.LastIndexByte(text, '\n')+1]
	for _, line := range e2e.Lines(text) {
		f := strings.Fields(line)
		if len(f) < 2 {
			t.Fatalf("log line %q", line)
		}
		want := map[string]int{"start": 5, "check": 5, "checker": 3}[f[min(1, len(f)-1)]]
		at, err := strconv.ParseInt(f[0], 10, 64)
		if f[1] == "start" {
			err = nil
		}
		if err != nil || want == 0 || len(f) != want {
			t.Fatalf("log line %q", line)
		}
		switch f[1] {
		case "start":
			tok, _ := strconv.ParseUint(f[2], 10, 64)
			pid, _ := strconv.Atoi(f[3])
			l.starts = append(l.starts, toldStart{at: e2e.Uptime(t, f[0]), token: tok, pid: pid, file: f[4]})
		case "check":
			code, _ := strconv.Atoi(f[2])
			tok, _ := strconv.ParseUint(f[3], 10, 64)
			l.checks = append(l.checks, toldCheck{at: boottime.Instant(at), code: code, token: tok, how: f[4]})
		case "checker":
			l.checker, _ = strconv.Atoi(f[2])
		}
	}
	return l
}

// violations are the answers "held" (exit 0) of lease check that began
// after a grant with a greater token had begun (its command had started):
// what tenure told a command outlived the grant.
func (l toldLog) violations() []string {
	var out []string
	for _, c := range l.checks {
		if c.code != 0 {
			continue
		}
		for _, s := range l.starts {
			if s.token > c.token && c.at > s.at {
				out = append(out, fmt.Sprintf("lease check (%s) answered held (exit 0, token %d) %s after the command of token %d started",
					c.how, c.token, c.at.Sub(s.at).Round(time.Millisecond), s.token))
				break
			}
		}
	}
	return out
}

// after is the first start with a token greater than token, if any.
func (l toldLog) after(token uint64) (toldStart, bool) {
	for _, s := range l.starts {
		if s.token > token {
			return s, true
		}
	}
	return toldStart{}, false
}

// toldCase is one way the guard or tenure can end, for
// TestToldNeverOutlivesGrant: fault is done to the first tenure run (a)
// whose command's guard is guardPid; after, once the next grant has begun
// (and the checker has answered since, if it survives); check, at the end.
type toldCase struct {
	name       string
	partitions bool   // one member, --partitions 1: the next grant is its own
	wrap       string // $WRAP: what the checker is started through ("": nothing)
	survives   bool   // the checker outlives the fault
	binaries   int    // if it survives, the answers of the binary it gives after the next grant began, at least
	fault      func(t *testing.T, a *e2e.Proc, guardPid int)
	after      func(t *testing.T, a *e2e.Proc, guardPid int)
	check      func(t *testing.T, a *e2e.Proc)
}

// TestToldNeverOutlivesGrant: whatever way the guard or tenure ends, no
// `tenure lease check` run by a process of the command's tree answers
// "held" once the next grant of the key has begun. A background process of
// the first tenure run's command runs lease check in a loop; a second
// tenure run on the same key (for --partitions, the member's own next
// grant of the partition) logs when its command starts; the boot clock
// orders the two.
func TestToldNeverOutlivesGrant(t *testing.T) {
	t.Parallel()
	srv := e2e.StartServer(t, t.TempDir())
	kill := func(sig syscall.Signal) func(*testing.T, *e2e.Proc, int) {
		return func(t *testing.T, _ *e2e.Proc, guardPid int) { toldSignal(t, guardPid, sig) }
	}
	cases := []toldCase{
		{name: "guard killed", survives: true, fault: kill(syscall.SIGKILL), check: func(t *testing.T, a *e2e.Proc) {
			if code := a.Wait(t, e2e.LossTTL+e2e.Slack); code != cli.ExitSoftware || !strings.Contains(a.Err.String(), "the guard") {
				t.Errorf("tenure run whose guard was SIGKILLed: exit %d; want %d, naming the guard's death\n%s", code, cli.ExitSoftware, a.Err)
			}
		}},
		{name: "guard killed with partitions", partitions: true, survives: true, fault: kill(syscall.SIGKILL)},
		{name: "tenure killed", fault: func(t *testing.T, a *e2e.Proc, _ int) { a.Signal(t, syscall.SIGKILL) }},
		{name: "both killed", survives: true, fault: toldKillBoth},
		{name: "tenure stopped", fault: func(t *testing.T, a *e2e.Proc, _ int) { a.Signal(t, syscall.SIGSTOP) },
			after: func(t *testing.T, a *e2e.Proc, _ int) { a.Signal(t, syscall.SIGCONT) }},
		{name: "guard stopped", survives: true, fault: toldStopGuard, after: kill(syscall.SIGCONT)},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			testTold(t, srv.Coord, fmt.Sprintf("told-%d", i), c)
		})
	}
}

// toldKillBoth SIGKILLs the guard, then tenure: nobody is left to mark the
// lease file ended.
func toldKillBoth(t *testing.T, a *e2e.Proc, guardPid int) {
	toldSignal(t, guardPid, syscall.SIGKILL)
	a.Signal(t, syscall.SIGKILL)
}

// toldStopGuard stops the guard, then tenure with SIGTERM: it stops
// renewing and waits for the guard, so the next grant comes at the lease's
// expiry, the lease file still saying the last deadline the guard wrote.
func toldStopGuard(t *testing.T, a *e2e.Proc, guardPid int) {
	toldSignal(t, guardPid, syscall.SIGSTOP)
	a.Signal(t, syscall.SIGTERM)
}

// testTold runs case c on key (see TestToldNeverOutlivesGrant).
func testTold(t *testing.T, coord []string, key string, c toldCase) {
	log := filepath.Join(t.TempDir(), "log")
	t.Cleanup(func() { toldStop(t, log) })
	env := []string{"LOG=" + log, "SELF=" + e2e.SelfBin, "TENURE=" + e2e.TenureBin, "WRAP=" + c.wrap}
	ttl := e2e.LossTTL
	if c.partitions {
		// A longer lease than the other cases: were the partition
		// claimed again a retry period after the guard died, the old
		// deadline would still lie seconds ahead of the next command's
		// start, which a loaded machine delays by seconds. tenure keeps
		// the partition until the last deadline the guard was told, so
		// the case lasts about a TTL.
		ttl = 10 * time.Second
	}
	args := func(holder string) []string {
		a := append(append([]string{}, coord...), "run", "--key", key, "--holder", holder)
		a = append(a, e2e.LossFlags...)
		if c.partitions {
			a = append(a, "--partitions", "1", "--ttl", ttl.String())
		}
		return append(a, "--", "sh", "-c", toldScript)
	}
	a := e2e.StartProc(t, "a", env, args("a")...)
	first := awaitTold(t, ttl, log, a, "the first command's start", func(l toldLog) bool { return len(l.starts) > 0 }).starts[0]
	awaitTold(t, ttl, log, a, "a lease check answering held", func(l toldLog) bool {
		return len(l.checks) > 0 && l.checks[len(l.checks)-1].code == 0
	})
	guardPid := e2e.ParentOf(t, first.pid)
	if e2e.ParentOf(t, guardPid) != a.PID() {
		t.Fatalf("the command's parent %d is not a child of tenure run (pid %d)", guardPid, a.PID())
	}
	if !c.partitions {
		b := e2e.StartProc(t, "b", env, args("b")...)
		e2e.WaitFor(t, 4*e2e.LossTTL+e2e.Slack, "the second tenure run campaigning", func() bool { return strings.Contains(b.Err.String(), "campaigning") })
	}
	c.fault(t, a, guardPid)
	l := awaitTold(t, ttl, log, nil, "the next grant's command", func(l toldLog) bool { _, ok := l.after(first.token); return ok })
	next, _ := l.after(first.token)
	if c.survives {
		awaitTold(t, ttl, log, nil, "lease check answers after the next grant began", func(l toldLog) bool {
			n, bin := 0, 0
			for _, ch := range l.checks {
				if ch.at > next.at {
					n++
					if ch.how == "binary" {
						bin++
					}
				}
			}
			return n >= 5 && bin >= c.binaries
		})
	}
	outside := e2e.RunTenure(t, nil, "lease", "check", "--lease-file", first.file)
	if outside.Code == 0 {
		t.Errorf("lease check of the first command's lease file, after the command of token %d started: exit 0, %q; want 1",
			next.token, outside.Stdout)
	}
	if c.after != nil {
		c.after(t, a, guardPid)
	}
	toldStop(t, log)
	l = readToldLog(t, log)
	for _, v := range l.violations() {
		t.Error(v)
	}
	since := map[string]int{}
	for _, ch := range l.checks {
		if ch.at > next.at {
			since[ch.how]++
		}
	}
	t.Logf("%d lease checks, %d by the binary; after the command of token %d started (%s after the first's, token %d): %d by the binary, %d in-process",
		len(l.checks), func() (n int) {
			for _, ch := range l.checks {
				if ch.how == "binary" {
					n++
				}
			}
			return n
		}(), next.token, next.at.Sub(first.at).Round(time.Millisecond), first.token, since["binary"], since["main"])
	if c.check != nil {
		c.check(t, a)
	}
}

// awaitTold waits, up to 6 TTLs (ttl) and the slack, for the log to satisfy ok,
// and returns it. p, when not nil, must not exit meanwhile.
func awaitTold(t *testing.T, ttl time.Duration, log string, p *e2e.Proc, what string, ok func(toldLog) bool) toldLog {
	t.Helper()
	d := 6*ttl + e2e.Slack
	for began := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		l := readToldLog(t, log)
		if ok(l) {
			return l
		}
		if p != nil && p.Exited() {
			t.Fatalf("%s exited %d before %s\n%s", p.Name, p.Code, what, p.Err)
		}
		if time.Since(began) > d {
			t.Fatalf("no %s within %s", what, d)
		}
	}
}

// toldStop stops the checker: it sees $LOG.stop, or, stopped or
// unresponsive, is killed.
func toldStop(t *testing.T, log string) {
	t.Helper()
	if err := os.WriteFile(log+".stop", nil, 0o644); err != nil {
		t.Error(err)
	}
	pid := readToldLog(t, log).checker
	if pid == 0 {
		return
	}
	for began := time.Now(); e2e.Alive(pid) && time.Since(began) < 5*time.Second; {
		time.Sleep(20 * time.Millisecond)
	}
	if e2e.Alive(pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// toldSignal sends sig to pid.
func toldSignal(t *testing.T, pid int, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatalf("signal %s to %d: %v", sig, pid, err)
	}
}
