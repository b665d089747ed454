//go:build linux

package guard_test

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tenure-dev/tenure/cmd/internal/guard/guardtest"
)

// TestGuardGroupLeaderPidReused: a scouted process that leads a process
// group (the writer of heartbeat reaped, in a group of its own) is killed
// and reaped after the scout, and its pid, and so its group's id, goes to
// a process outside the tree that leads a group of its own (the test sets
// the kernel's ns_last_pid for it). The freeze and the kill, which signal
// the groups the scouted processes lead, must not signal that group: the
// outsider neither stops nor dies. (Needs root: ns_last_pid.)
func TestGuardGroupLeaderPidReused(t *testing.T) {
	prog, err := guardtest.Program(t.TempDir(), "heartbeat")
	if err != nil {
		t.Fatal(err)
	}
	hb := startHeartbeat(t, prog, "reaped", time.Minute, 2*time.Second)
	writer := readInt(hb.out)
	if f := statFields(writer); f == nil || f[2] != strconv.Itoa(writer) {
		t.Fatalf("the writer %d does not lead its process group: stat %v", writer, f)
	}
	reapScouted(t, hb, writer)
	outsider := reusePid(t, writer, 0)
	if f := statFields(outsider.Process.Pid); f == nil || f[2] != strconv.Itoa(writer) {
		t.Fatalf("the outsider %d does not lead group %d: stat %v", outsider.Process.Pid, writer, f)
	}
	r, ok := hb.g.report(reportWithin)
	if !ok {
		t.Fatalf("no report within %s of the deadline; alive: %s", reportWithin, describe(hb.held.alive()))
	}
	if !r.Killed || !r.Expired {
		t.Errorf("report %+v; want killed, expired", r)
	}
	time.Sleep(100 * time.Millisecond)
	if f := statFields(writer); f == nil || f[0] == "T" || f[0] == "Z" || f[0] == "t" {
		t.Errorf("the outsider %d (outside the tree, leading group %d, the id of a scouted leader reaped since) was signalled by the guard: stat %v", writer, writer, f)
	}
}

// reapScouted waits until the guard of hb has scouted process pid (it
// scouts on the lease startHeartbeat sent, and then holds a pidfd for
// it), then kills pid and waits until it is reaped: its pid is free for
// reuse while the guard still holds the scout's pidfd.
func reapScouted(t *testing.T, hb *heartbeat, pid int) {
	t.Helper()
	for began := time.Now(); !holdsPidfd(hb.g.cmd.Process.Pid, pid); time.Sleep(time.Millisecond) {
		if time.Since(began) > reportWithin {
			t.Fatalf("the guard holds no pidfd for process %d within %s of the lease", pid, reportWithin)
		}
	}
	if err := unix.PidfdSendSignal(hb.held[pid], syscall.SIGKILL, nil, 0); err != nil {
		t.Fatal(err)
	}
	for began := time.Now(); statFields(pid) != nil; time.Sleep(time.Millisecond) {
		if time.Since(began) > reportWithin {
			t.Fatalf("process %d was not reaped within %s: stat %v", pid, reportWithin, statFields(pid))
		}
	}
}

// holdsPidfd reports whether process holder has a pidfd for process pid
// open (its fdinfo says so; reading another user's, or an undumpable
// process's, needs root).
func holdsPidfd(holder, pid int) bool {
	dir := "/proc/" + strconv.Itoa(holder)
	fds, _ := os.ReadDir(dir + "/fd")
	for _, fd := range fds {
		if link, err := os.Readlink(dir + "/fd/" + fd.Name()); err != nil || link != "anon_inode:[pidfd]" {
			continue
		}
		b, _ := os.ReadFile(dir + "/fdinfo/" + fd.Name())
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) == 2 && f[0] == "Pid:" && f[1] == strconv.Itoa(pid) {
				return true
			}
		}
	}
	return false
}

// reusePid starts a process outside the tree, `sleep 60` in process group
// pgid (0: one of its own), with pid want (free): it sets the kernel's last
// pid to the one before and tries again while another process takes want
// first.
func reusePid(t *testing.T, want, pgid int) *exec.Cmd {
	t.Helper()
	for try := 0; try < 100; try++ {
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(want-1)), 0); err != nil {
			t.Fatalf("set the last pid (needs root): %v", err)
		}
		cmd := exec.Command("sleep", "60")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pgid}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if cmd.Process.Pid == want {
			t.Cleanup(func() {
				cmd.Process.Kill()
				cmd.Wait()
			})
			return cmd
		}
		cmd.Process.Kill()
		cmd.Wait()
	}
	t.Fatalf("no process got pid %d in 100 tries", want)
	return nil
}

// startOutsider starts `sleep 60`, outside the tree, in process group
// pgid (0: one of its own), and returns its pid.
func startOutsider(t *testing.T, pgid int) int {
	t.Helper()
	outsider := exec.Command("sleep", "60")
	outsider.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: pgid}
	if err := outsider.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		outsider.Process.Kill()
		outsider.Wait()
	})
	return outsider.Process.Pid
}
