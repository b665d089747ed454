package term

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tenure-dev/tenure/cmd/internal/e2e"
	"github.com/tenure-dev/tenure/cmd/internal/guard"
	"github.com/tenure-dev/tenure/internal/boottime"
)

// The $WRAP of the cases of TestToldWhateverTheClock: the checker runs in a
// time namespace of its own whose boot clock reads a minute behind the
// host's (as a container restored with a boot-clock offset does), or under
// a seccomp filter that refuses clock_gettime(CLOCK_BOOTTIME) (childMain's
// "noboottime"; Go's own clocks use the vDSO, which the filter does not
// see, so a filter built by tracing a Go program can leave the call out).
const (
	toldTimeNS     = "unshare --user --map-root-user --time --boottime -60 --fork"
	toldNoBootTime = "env " + e2e.ChildModeEnv + "=noboottime"
)

// TestToldWhateverTheClock: a process of the command's tree that runs
// `tenure lease check` with a boot clock of its own, a minute behind
// tenure's or unreadable, is told "not held" once the next grant of the
// key has begun, in the cases where the lease file still says live and
// only its deadline says the term is over: the guard and tenure both
// killed, and the guard stopped (see TestToldNeverOutlivesGrant).
func TestToldWhateverTheClock(t *testing.T) {
	t.Parallel()
	if out, err := exec.Command("sh", "-c", toldTimeNS+" true").CombinedOutput(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s: %v\n%s", toldTimeNS, err, out)
		}
		t.Skipf("no time namespace here: %v\n%s", err, out)
	}
	srv := e2e.StartServer(t, t.TempDir())
	cases := []toldCase{
		{name: "both killed, time namespace", wrap: toldTimeNS, survives: true, fault: toldKillBoth},
		{name: "guard stopped, time namespace", wrap: toldTimeNS, survives: true, fault: toldStopGuard,
			after: func(t *testing.T, _ *e2e.Proc, guardPid int) { toldSignal(t, guardPid, syscall.SIGCONT) }},
		{name: "both killed, boot clock refused", wrap: toldNoBootTime, survives: true, fault: toldKillBoth},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			testTold(t, srv.Coord, "told-clock-"+strconv.Itoa(i), c)
		})
	}
}

// noBootTimeMain is childMain's modes "noboottime" and "noboottime-exec":
// refuse clock_gettime(CLOCK_BOOTTIME) with EPERM (a seccomp filter, kept
// across execve), then run argv, or, when argv is empty, this program
// again as the checker ("toldcheck").
func noBootTimeMain(argv []string) int {
	runtime.LockOSThread() // the filter is this thread's, which execs
	const retAllow, retErrno = 0x7fff0000, 0x00050000
	prog := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // the call's number
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_CLOCK_GETTIME, Jf: 3},
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 16}, // its first argument's low half
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.CLOCK_BOOTTIME, Jf: 1},
		{Code: unix.BPF_RET | unix.BPF_K, K: retErrno | uint32(unix.EPERM)},
		{Code: unix.BPF_RET | unix.BPF_K, K: retAllow},
	}
	fp := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "no_new_privs:", err)
		return 1
	}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fp)), 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "seccomp:", err)
		return 1
	}
	var env []string
	path := "/proc/self/exe"
	if len(argv) == 0 {
		argv, env = os.Args[:1], []string{e2e.ChildModeEnv + "=toldcheck"}
	} else if p, err := exec.LookPath(argv[0]); err == nil {
		path = p
	} else {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, e2e.ChildModeEnv+"=") {
			env = append(env, kv)
		}
	}
	fmt.Fprintln(os.Stderr, syscall.Exec(path, argv, env))
	return 1
}

// hostBoot reads the host's boot clock, wherever the checker runs: this
// process's CLOCK_BOOTTIME (/proc/uptime where it is refused, to the
// hundredth), less the boot-clock offset of its time namespace
// (/proc/self/timens_offsets), so that the checker logs on the clock the
// commands' starts are logged on.
func hostBoot() boottime.Instant {
	var ts unix.Timespec
	now := boottime.Instant(0)
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err == nil {
		now = boottime.Instant(ts.Nano())
	} else if b, err := os.ReadFile("/proc/uptime"); err == nil {
		if f := bytes.Fields(b); len(f) > 0 {
			secs, _ := strconv.ParseFloat(string(f[0]), 64)
			now = boottime.Instant(secs * float64(time.Second))
		}
	}
	return now.Add(-timeNSOffset())
}

// timeNSOffset is the boot-clock offset of this process's time namespace
// (guard.BootOffset), 0 where it cannot be told.
func timeNSOffset() time.Duration {
	off, _ := guard.BootOffset()
	return off
}
