//go:build linux && openfinding

// Open finding, red on purpose: run it with
//
//	cd cmd && go test -tags openfinding -count=1 -run 'TestLoadedGuardNotDumpable|TestGuardReportTakenAtExec' ./internal/guard/guardbin/
//
// A guard is dumpable from its execve until its own PR_SET_DUMPABLE
// (guard.Undumpable, in its main). Its channels are sockets, which nobody
// can open through /proc/GUARD/fd (TestGuardChannelsClosedAtExec); but in
// that instant a process of the same user, not root, may still take them
// with pidfd_getfd, or ptrace the guard (and, a tracer staying attached,
// hold it for good), where the kernel lets a user trace its own processes
// (no Yama, as on this kernel, or Yama's ptrace_scope 0). Taking the
// guard's end of the control channel lets it read, not write, the guard's
// messages; taking its end of the report channel lets it write reports of
// its own to tenure (TestGuardForged in package guard shows what a forged
// report does). Measured: a process of tenure's user reading /proc in a
// loop took the report channel of 24 of the 29 guards that tenure run
// --restart started in 30 s.
// Making the loaded program unreadable (mode 0111) does not help: on this
// kernel (6.18) a process executed from a file its user may not read stays
// dumpable.

package guardbin_test

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tenure-dev/tenure/cmd/internal/guard"
	"github.com/tenure-dev/tenure/cmd/internal/guard/guardbin"
)

// takeEnv, "PID FD" in its environment, makes the test binary take file
// descriptor FD of process PID (pidfd_getfd) and write forgedReport on it.
const takeEnv = "TENURE_GUARDBIN_TEST_TAKE"

// forgedReport says the command exited 0.
const forgedReport = `{"exited":true,"code":0,"status":"exit status 0"}` + "\n"

func init() {
	if v := os.Getenv(takeEnv); v != "" {
		var pid, fd int
		_, err := fmt.Sscan(v, &pid, &fd)
		var pfd int
		if err == nil {
			pfd, err = unix.PidfdOpen(pid, 0)
		}
		if err == nil {
			fd, err = unix.PidfdGetfd(pfd, fd, 0)
		}
		if err == nil {
			_, err = unix.Write(fd, []byte(forgedReport))
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "take fd: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// TestLoadedGuardNotDumpable: a guard run from the loaded program by a
// user that is not root is not dumpable from its execve on, before its own
// PR_SET_DUMPABLE. /proc/PID of a process that is not dumpable belongs to
// root. The guard is stopped right after execve (ptrace), before any of
// its own code runs. (Needs root: the guard runs as user 65534.)
func TestLoadedGuardNotDumpable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatalf("needs root, to run the guard as user 65534")
	}
	g := startStopped(t, nil, nil)
	fi, err := os.Stat("/proc/" + strconv.Itoa(g))
	if err != nil {
		t.Fatal(err)
	}
	if uid := fi.Sys().(*syscall.Stat_t).Uid; uid != 0 {
		t.Errorf("/proc/%d of a guard run as user 65534, stopped after execve, belongs to uid %d; want 0 (not dumpable)", g, uid)
	}
}

// TestGuardReportTakenAtExec: a process of the guard's user (65534, not
// root) cannot take the guard's report channel (pidfd_getfd of its file
// descriptor guard.ReportFD) while the guard, run from the loaded
// program, is stopped (ptrace) right after its execve, before its own
// PR_SET_DUMPABLE, and write on it a report that the command exited,
// which tenure would read. (Needs root: the guard runs as user 65534.)
func TestGuardReportTakenAtExec(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatalf("needs root, to run the guard as user 65534")
	}
	g, _, repR := startStoppedChannels(t)
	// This test binary, run as user 65534 from memory (it may not reach
	// the file).
	self, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	f, err := guardbin.LoadProgram(self)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	take := &exec.Cmd{Path: guardbin.ExecPath, Args: []string{"take"}, ExtraFiles: []*os.File{nil, nil, f},
		Env:         []string{takeEnv + "=" + strconv.Itoa(g) + " " + strconv.Itoa(guard.ReportFD)},
		SysProcAttr: &syscall.SysProcAttr{Credential: nobody}}
	out, err := take.CombinedOutput()
	if err != nil {
		t.Logf("user 65534 could not take the guard's report channel: %v: %s", err, out)
		return
	}
	repR.SetReadDeadline(time.Now().Add(time.Second))
	b := make([]byte, 256)
	n, _ := repR.Read(b)
	t.Errorf("user 65534 took the report channel of a guard of its user stopped right after its execve (pidfd_getfd) and wrote on it; tenure's end read %q", strings.TrimSpace(string(b[:n])))
}
