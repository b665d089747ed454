//go:build linux && openfinding

// Open finding, red on purpose: run it with
//
//	cd cmd && go test -tags openfinding -count=1 -run 'TestLoadedGuardNotDumpable' ./internal/guard/guardbin/
//
// A guard is dumpable from its execve until its own PR_SET_DUMPABLE
// (guard.Undumpable, in its main). Its channels are sockets, which nobody
// can open through /proc/GUARD/fd (TestGuardChannelsClosedAtExec); but in
// that instant a process of the same user, not root, may still ptrace the
// guard where the kernel lets a user trace its own processes (no Yama, or
// ptrace_scope 0), and, a tracer staying attached, hold it for good.
// Making the loaded program unreadable (mode 0111) does not help: on this
// kernel (6.18) a process executed from a file its user may not read stays
// dumpable.

package guardbin_test

import (
	"os"
	"strconv"
	"syscall"
	"testing"
)

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
