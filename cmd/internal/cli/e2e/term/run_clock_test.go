package term

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tenure-dev/tenure/cmd/internal/e2e"
)

// procWrap writes a script that runs its arguments (after target, when not
// "") in a mount namespace of their own where mount has been run (/proc
// mounted with subset=pid, a file bound over /proc/uptime), under the
// seccomp filter of noBootTimeMain: a boot clock that only /proc can give,
// and /proc does not give the host's. It needs root (mount).
func procWrap(t *testing.T, mount, target string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("mounting /proc needs root, and CI runs every test")
		}
		t.Skip("mounting /proc needs root")
	}
	path := filepath.Join(t.TempDir(), "wrap.sh")
	script := fmt.Sprintf("#!/bin/sh\nexec unshare --mount --propagation private -- sh -c '%s && exec env %s=noboottime-exec \"$@\"' sh %s %s \"$@\"\n",
		mount, e2e.ChildModeEnv, e2e.SelfBin, target)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// procMounts are the /proc of procWrap: none gives the host's boot clock.
func procMounts(t *testing.T) map[string]string {
	fake := filepath.Join(t.TempDir(), "uptime")
	// A container's uptime (as lxcfs shows it): its own, not the host's.
	if err := os.WriteFile(fake, []byte("3.00 3.00\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"proc subset=pid":      "mount -t proc -o subset=pid proc /proc",
		"uptime a container's": "mount --bind " + fake + " /proc/uptime",
	}
}

// TestToldWhateverTheProc: `tenure lease check`, run by a process of the
// command's tree under a seccomp filter that refuses
// clock_gettime(CLOCK_BOOTTIME), with a /proc that does not give the
// host's boot clock (mounted with subset=pid: no /proc/uptime; or a
// container's uptime bound over it, as lxcfs does), is told "not held" once
// the next grant of the key has begun, the guard and tenure both killed
// (the lease file says live until its deadline).
func TestToldWhateverTheProc(t *testing.T) {
	t.Parallel()
	srv := e2e.StartServer(t, t.TempDir())
	i := 0
	for name, mount := range procMounts(t) {
		wrap := "env TENURE=" + procWrap(t, mount, e2e.TenureBin)
		key := "told-proc-" + strconv.Itoa(i)
		i++
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testTold(t, srv.Coord, key, toldCase{name: name, wrap: wrap, survives: true, binaries: 3, fault: toldKillBoth})
		})
	}
}

// TestToldAcrossTimeNamespaces: lease check run by a checker two time
// namespaces deep (a minute behind, then 30 s behind the host: offsets
// are the host's, not the parent's), or execed by a process that made a
// time namespace a minute behind without entering it (timeNSExecMain:
// execve enters it), or in a time namespace a minute behind under the
// seccomp filter refusing CLOCK_BOOTTIME (/proc/uptime and /proc/self/stat
// are both on its namespace's clock), is told "not held" once the next
// grant has begun, both guard and tenure killed, and "held" before.
func TestToldAcrossTimeNamespaces(t *testing.T) {
	t.Parallel()
	srv := e2e.StartServer(t, t.TempDir())
	cases := []toldCase{
		{name: "nested", wrap: toldTimeNS + " unshare --time --boottime -30 --fork", survives: true, fault: toldKillBoth},
		{name: "made not entered", wrap: "env " + e2e.ChildModeEnv + "=timens-exec " + e2e.SelfBin + " env " + e2e.ChildModeEnv + "=toldcheck",
			survives: true, fault: toldKillBoth},
		{name: "time namespace, boot clock refused", wrap: toldTimeNS + " " + toldNoBootTime, survives: true, binaries: 1, fault: toldKillBoth},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			testTold(t, srv.Coord, "told-ns-"+strconv.Itoa(i), c)
		})
	}
}

// The child mode "timens-exec" runs before the tests' TestMain, in init,
// on the main thread: /proc/self/timens_offsets is that thread's
// children's time namespace's.
func init() {
	if os.Getenv(e2e.ChildModeEnv) == "timens-exec" {
		os.Exit(timeNSExecMain(os.Args[1:]))
	}
}

// timeNSExecMain is the child mode "timens-exec": make a time namespace
// whose boot clock reads a minute behind this one's, without entering it
// (unshare(CLONE_NEWTIME) moves only the children: util-linux's unshare
// enters it), then run argv, whose children are in it. It runs on the
// main thread (see init).
func timeNSExecMain(argv []string) int {
	runtime.LockOSThread()
	err := unix.Unshare(unix.CLONE_NEWTIME)
	if err == nil {
		err = os.WriteFile("/proc/self/timens_offsets", []byte("boottime -60 0\n"), 0o644)
	}
	path := ""
	if err == nil {
		path, err = exec.LookPath(argv[0])
	}
	if err == nil {
		var env []string
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, e2e.ChildModeEnv+"=") {
				env = append(env, kv)
			}
		}
		err = syscall.Exec(path, argv, env)
	}
	fmt.Fprintln(os.Stderr, "timens-exec:", err)
	return 1
}

// runClockScript is the command of the tests below: unless $ONCE is
// empty or $OUT.first exists (then it exits after 15 s, so that
// tenure run --restart starts the next command on a guard started then),
// it writes "PID LEASE_FILE" to $OUT, ignores SIGTERM and sleeps until
// killed.
const runClockScript = `if [ -n "$ONCE" ] && mkdir "$OUT.first" 2>/dev/null; then sleep 15; exit 0; fi
echo "$$ $TENURE_LEASE_FILE" > "$OUT.tmp" && mv "$OUT.tmp" "$OUT"
trap '' TERM
exec sleep 3600`

// TestRunOnOneBootClock: tenure run whose guard may read another boot
// clock than tenure's either refuses to run the command or still has it
// killed by its deadline: stopped (SIGSTOP), so that it renews no more,
// its command dies within the TTL and the slack, and the next holder's
// command never starts while it runs; lease check of its lease file, from
// the host, says not held once the next holder's has started. The ways:
// tenure run execed by a process that made a time namespace a minute
// behind without entering it (timeNSExecMain; Linux moves a process into
// its children's time namespace at execve, so tenure and its guards share
// one: measured, 3.5-3.9 s), the same entered (unshare --fork), and tenure
// run under a seccomp filter refusing CLOCK_BOOTTIME with no /proc/uptime
// (/proc mounted subset=pid; the guard of the second command, --restart,
// started 15 s after tenure, read a clock of its own and killed 19.8 s
// after the stop, 14.7 s after the next holder's command started, before
// the guard refused such a clock).
func TestRunOnOneBootClock(t *testing.T) {
	t.Parallel()
	if out, err := exec.Command("unshare", "--time", "--boottime", "-60", "true").CombinedOutput(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("unshare --time: %v\n%s", err, out)
		}
		t.Skipf("no time namespace here: %v\n%s", err, out)
	}
	srv := e2e.StartServer(t, t.TempDir())
	cases := []struct {
		name string
		via  func(t *testing.T) []string
		once bool
	}{
		{name: "time namespace made, entered at exec", via: func(*testing.T) []string { return []string{"env", e2e.ChildModeEnv + "=timens-exec", e2e.SelfBin} }},
		{name: "time namespace entered", via: func(*testing.T) []string {
			return []string{"unshare", "--time", "--boottime", "-60", "--fork", "--kill-child"}
		}},
		{name: "boot clock refused, proc subset=pid", once: true, via: func(t *testing.T) []string {
			return []string{procWrap(t, "mount -t proc -o subset=pid proc /proc", "")}
		}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			testRunClock(t, srv.Coord, "run-clock-"+strconv.Itoa(i), c.via(t), c.once)
		})
	}
}

func testRunClock(t *testing.T, coord []string, key string, via []string, once bool) {
	dir := t.TempDir()
	outA, outB := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	args := func(holder string) []string {
		a := append(append([]string{}, coord...), "run", "--key", key, "--holder", holder, "--restart")
		return append(append(a, e2e.LossFlags...), "--", "sh", "-c", runClockScript)
	}
	onceEnv := ""
	if once {
		onceEnv = "1"
	}
	a := e2e.StartProcVia(t, "a", via, []string{"OUT=" + outA, "ONCE=" + onceEnv}, args("a")...)
	var pid int
	var file string
	e2e.WaitFor(t, 60*time.Second, "a's command, or tenure refusing", func() bool {
		if f := strings.Fields(e2e.ReadFile(outA)); len(f) == 2 {
			pid, _ = strconv.Atoi(f[0])
			file = f[1]
			return true
		}
		return a.Exited()
	})
	if pid == 0 {
		if a.Code == 0 {
			t.Fatalf("tenure run exited 0 before its command started\n%s", a.Err)
		}
		t.Logf("tenure run refused: exit %d\n%s", a.Code, a.Err)
		return
	}
	guardPid := e2e.ParentOf(t, pid)
	tenurePid := e2e.ParentOf(t, guardPid)
	t.Cleanup(func() {
		_ = syscall.Kill(tenurePid, syscall.SIGCONT)
		_ = syscall.Kill(tenurePid, syscall.SIGKILL)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	})
	b := e2e.StartProc(t, "b", []string{"OUT=" + outB}, args("b")...)
	e2e.WaitFor(t, 4*e2e.LossTTL+e2e.Slack, "b campaigning", func() bool { return strings.Contains(b.Err.String(), "campaigning") })
	if err := syscall.Kill(tenurePid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	var died, bStarted time.Time
	var held []string
	for time.Since(stopped) < 90*time.Second && (died.IsZero() || bStarted.IsZero()) {
		if died.IsZero() && !e2e.Alive(pid) {
			died = time.Now()
		}
		if bStarted.IsZero() && len(strings.Fields(e2e.ReadFile(outB))) == 2 {
			bStarted = time.Now()
		}
		if !bStarted.IsZero() && died.IsZero() && len(held) < 3 {
			if r := e2e.RunTenure(t, nil, "lease", "check", "--lease-file", file); r.Code == 0 {
				held = append(held, fmt.Sprintf("held (token %s) %s after b's command started", strings.TrimSpace(r.Stdout),
					time.Since(bStarted).Round(time.Millisecond)))
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	took := died.Sub(stopped)
	if died.IsZero() {
		took = time.Since(stopped)
	}
	t.Logf("tenure stopped: its command died %s later (alive: %t); b's command started %s after the stop",
		took.Round(time.Millisecond), died.IsZero(), bStarted.Sub(stopped).Round(time.Millisecond))
	if died.IsZero() || took > e2e.LossTTL+e2e.Slack {
		t.Errorf("tenure run stopped (SIGSTOP): its command died %s later (or not at all); want within the TTL and the slack (%s)",
			took.Round(time.Millisecond), e2e.LossTTL+e2e.Slack)
	}
	if end := stopped.Add(took); !bStarted.IsZero() && end.After(bStarted) {
		t.Errorf("a's command ran on %s after b's command started", end.Sub(bStarted).Round(time.Millisecond))
	}
	for _, h := range held {
		t.Errorf("lease check of a's lease file from the host: %s", h)
	}
}
