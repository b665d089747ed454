//go:build linux

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

// nobody is the user the guards of these tests run as: not root.
var nobody = &syscall.Credential{Uid: 65534, Gid: 65534}

// TestGuardChannelsClosedAtExec: a process of the guard's user (65534, not
// root) cannot open either of the guard's channels (guard.Channel) through
// /proc/GUARD/fd/3 or 4 while the guard, run from the loaded program, is
// stopped (ptrace) right after its execve, before any of its own code runs
// and so before it makes itself not dumpable: the instant in which, with
// pipes, such a process reading /proc in a loop opened the control pipe of
// 25 of the 30 guards that tenure run --restart started in 30 s (none of
// 29 with sockets), to write renewals of its own to it later
// (TestGuardForged in package guard shows what they do). (Needs root: the
// guard runs as user 65534.)
func TestGuardChannelsClosedAtExec(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatalf("needs root, to run the guard as user 65534")
	}
	g, _, _ := startStoppedChannels(t)
	for fd, name := range map[int]string{guard.ControlFD: "control", guard.ReportFD: "report"} {
		path := "/proc/" + strconv.Itoa(g) + "/fd/" + strconv.Itoa(fd)
		sh := exec.Command("sh", "-c", `exec 9> "$1"`, "sh", path)
		sh.SysProcAttr = &syscall.SysProcAttr{Credential: nobody}
		if out, err := sh.CombinedOutput(); err == nil {
			t.Errorf("user 65534 opened %s, the %s channel of a guard of its user stopped right after its execve, for writing", path, name)
		} else {
			t.Logf("user 65534 could not open %s (%s): %v: %s", path, name, err, out)
		}
	}
}

// startStoppedChannels starts a guard with args as startStopped does, with
// both its channels (guard.Channel), its ends belonging to its user as
// they do when tenure runs as that user, and returns its pid and tenure's
// ends, ctl and rep, closed at the end of the test.
func startStoppedChannels(t *testing.T, args ...string) (g int, ctl, rep *os.File) {
	t.Helper()
	ctlW, ctlR, err := guard.Channel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctlW.Close() })
	repR, repW, err := guard.Channel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { repR.Close() })
	defer ctlR.Close()
	defer repW.Close()
	for _, f := range []*os.File{ctlR, repW} {
		if err := f.Chown(int(nobody.Uid), int(nobody.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	return startStopped(t, ctlR, repW, args...), ctlW, repR
}

// startStopped starts a guard as user 65534 from the loaded program, with
// args, ctl and rep as its guard.ControlFD and guard.ReportFD, and returns its
// pid once it is stopped right after its execve (traced by this thread,
// locked to it until the test ends), before any of its own code runs. The
// guard is killed at the end of the test.
func startStopped(t *testing.T, ctl, rep *os.File, args ...string) int {
	t.Helper()
	f := loadGuard(t)
	runtime.LockOSThread() // the tracer is this thread
	t.Cleanup(runtime.UnlockOSThread)
	cmd := &exec.Cmd{Path: guardbin.ExecPath, Args: append([]string{guard.Name}, args...), ExtraFiles: []*os.File{ctl, rep, f},
		SysProcAttr: &syscall.SysProcAttr{Ptrace: true, Credential: nobody}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(cmd.Process.Pid, &ws, syscall.WALL, nil); err != nil || !ws.Stopped() {
		t.Fatalf("the guard did not stop after execve: %v, %v", err, ws)
	}
	return cmd.Process.Pid
}
