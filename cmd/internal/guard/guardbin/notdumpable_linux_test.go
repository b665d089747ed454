//go:build linux && openfinding

package guardbin_test

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"testing"

	"github.com/tenure-dev/tenure/cmd/internal/guard"
	"github.com/tenure-dev/tenure/cmd/internal/guard/guardbin"
)

// TestLoadedGuardNotDumpable: a guard run from the loaded program by a
// user that is not root is not dumpable from its execve on, before its own
// PR_SET_DUMPABLE: a process of the same user cannot open its pipes
// through /proc/GUARD/fd in the instant between the two (7 of 18 guards
// started by tenure run --restart were opened so by a process of their
// user that read /proc in a loop, when the loaded program was readable).
// The kernel makes a process it executes from a file its user may not read
// not dumpable; /proc/PID of such a process belongs to root. The guard is
// stopped right after execve (ptrace), before any of its own code runs.
// (Needs root: the guard runs as user 65534.)
func TestLoadedGuardNotDumpable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatalf("needs root, to run the guard as user 65534")
	}
	prog, err := os.ReadFile(buildGuard(t))
	if err != nil {
		t.Fatal(err)
	}
	f, err := guardbin.LoadProgram(prog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	runtime.LockOSThread() // the tracer is this thread
	defer runtime.UnlockOSThread()
	cmd := &exec.Cmd{Path: guardbin.ExecPath, Args: []string{guard.Name}, ExtraFiles: []*os.File{nil, nil, f},
		SysProcAttr: &syscall.SysProcAttr{Ptrace: true, Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(cmd.Process.Pid, &ws, syscall.WALL, nil); err != nil || !ws.Stopped() {
		t.Fatalf("the guard did not stop after execve: %v, %v", err, ws)
	}
	fi, err := os.Stat("/proc/" + strconv.Itoa(cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if uid := fi.Sys().(*syscall.Stat_t).Uid; uid != 0 {
		t.Errorf("/proc/%d of a guard run as user 65534, stopped after execve, belongs to uid %d; want 0 (not dumpable)", cmd.Process.Pid, uid)
	}
}
