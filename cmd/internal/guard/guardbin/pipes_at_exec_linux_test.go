//go:build linux && openfinding

// Open finding, red on purpose: run it with
//
//	cd cmd && go test -tags openfinding -count=1 -run 'TestGuardPipesClosedAtExec|TestLoadedGuardNotDumpable' ./internal/guard/guardbin/
//
// A guard is dumpable from its execve until its own PR_SET_DUMPABLE
// (guard.Undumpable, in its main): in that instant a process of the same
// user, not root, may open the guard's control pipe through
// /proc/GUARD/fd/3 and keep it, to write renewals of its own to the guard
// later (TestGuardForged in package guard shows what they do). Measured:
// a process of tenure's user reading /proc in a loop opened the control
// pipe of 7 of 18 guards that tenure run --restart started (the guard
// still named "5", the descriptor it was executed from). Making the loaded
// program unreadable (mode 0111) does not help: on this kernel (6.18) a
// process executed from a file its user may not read stays dumpable. A
// fix could pass the guard sockets (socketpair) instead of pipes: a socket
// cannot be opened through /proc/PID/fd at all.

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

// TestGuardPipesClosedAtExec: a process of the guard's user (65534, not
// root) cannot open the guard's control pipe through /proc/GUARD/fd/3
// while the guard, run from the loaded program, is stopped (ptrace) right
// after its execve, before any of its own code runs. (Needs root: the
// guard runs as user 65534.)
func TestGuardPipesClosedAtExec(t *testing.T) {
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
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer ctlW.Close()
	repR, repW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer repR.Close()
	// The pipes are tenure's, the guard's user's: a pipe is open to its
	// owner only.
	for _, p := range []*os.File{ctlR, repW} {
		if err := p.Chown(65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	nobody := &syscall.Credential{Uid: 65534, Gid: 65534}
	runtime.LockOSThread() // the tracer is this thread
	defer runtime.UnlockOSThread()
	cmd := &exec.Cmd{Path: guardbin.ExecPath, Args: []string{guard.Name}, ExtraFiles: []*os.File{ctlR, repW, f},
		SysProcAttr: &syscall.SysProcAttr{Ptrace: true, Credential: nobody}}
	err = cmd.Start()
	ctlR.Close()
	repW.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(cmd.Process.Pid, &ws, syscall.WALL, nil); err != nil || !ws.Stopped() {
		t.Fatalf("the guard did not stop after execve: %v, %v", err, ws)
	}
	fd3 := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/fd/3"
	sh := exec.Command("sh", "-c", `exec 9> "$1"`, "sh", fd3)
	sh.SysProcAttr = &syscall.SysProcAttr{Credential: nobody}
	if out, err := sh.CombinedOutput(); err == nil {
		t.Errorf("user 65534 opened %s, the control pipe of a guard of its user stopped right after its execve, for writing", fd3)
	} else {
		t.Logf("user 65534 could not open %s: %v: %s", fd3, err, out)
	}
}

// TestLoadedGuardNotDumpable: a guard run from the loaded program by a
// user that is not root is not dumpable from its execve on, before its own
// PR_SET_DUMPABLE: a process of the same user cannot open its pipes
// through /proc/GUARD/fd in the instant between the two (see
// TestGuardPipesClosedAtExec).
// /proc/PID of a process that is not dumpable belongs to root. The guard is
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
