package guard_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tenure-dev/tenure/cmd/internal/guard"
	"github.com/tenure-dev/tenure/internal/boottime"
)

// guardProc is a guard run as a process of its own (the test binary, made
// a guard by guard.AsGuardEnv), as tenure run runs one: messages go in on
// its control channel, reports come out of its report channel (guard.Channel).
type guardProc struct {
	cmd     *exec.Cmd
	ctl     *os.File // tenure's end of the control channel; nil once closed
	rep     *os.File // tenure's end of the report channel the guard handed over, which read reads; nil if refused
	reports chan guard.Report
	stderr  string // file
	exited  chan struct{}
	// handoffErr is why the report channel the guard handed over was
	// refused.
	handoffErr error
}

// startGuard starts a guard with kill grace grace for the command at path
// with argv (argv[0] its name), run with the extra arguments wrap puts
// before the guard's own (unshare, setpriv…), and env added to its
// environment.
func startGuard(t *testing.T, grace time.Duration, wrap, env []string, path string, argv ...string) *guardProc {
	t.Helper()
	ctlW, ctlR, err := guard.Channel()
	if err != nil {
		t.Fatal(err)
	}
	repR, repW, err := guard.Channel()
	if err != nil {
		t.Fatal(err)
	}
	g := &guardProc{ctl: ctlW, reports: make(chan guard.Report, 4), stderr: filepath.Join(t.TempDir(), "stderr"), exited: make(chan struct{})}
	stderr, err := os.Create(g.stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	args := append(append(slices.Clone(wrap), os.Args[0], "--kill-grace", grace.String(), "--", path), argv...)
	g.cmd = exec.Command(args[0], args[1:]...)
	g.cmd.Env = append(append(os.Environ(), guard.AsGuardEnv+"=1"), env...)
	g.cmd.ExtraFiles = []*os.File{ctlR, repW}
	g.cmd.Stderr = stderr
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ctlR.Close()
	repW.Close()
	// Tenure's end of the report channel is the one the guard hands over.
	g.rep, g.handoffErr = guard.AcceptReport(repR, g.cmd.Process.Pid)
	repR.Close()
	go g.read(g.rep)
	t.Cleanup(func() {
		g.closeControl()
		select {
		case <-g.exited:
		case <-time.After(10 * time.Second):
			g.cmd.Process.Kill()
			<-g.exited
		}
		if g.handoffErr != nil && t.Failed() {
			t.Logf("the guard's handover: %v", g.handoffErr)
		}
		if b, _ := os.ReadFile(g.stderr); t.Failed() && len(b) > 0 {
			t.Logf("guard's stderr:\n%s", b)
		}
	})
	return g
}

// read passes on the guard's reports until the channel closes, then waits for
// the guard to exit.
func (g *guardProc) read(rep *os.File) {
	defer close(g.exited)
	if rep == nil {
		close(g.reports)
		g.cmd.Wait()
		return
	}
	defer rep.Close()
	dec := json.NewDecoder(rep)
	for {
		var r guard.Report
		if err := dec.Decode(&r); err != nil {
			close(g.reports)
			g.cmd.Wait()
			return
		}
		g.reports <- r
	}
}

// send sends m on the control channel.
func (g *guardProc) send(t *testing.T, m guard.Message) {
	t.Helper()
	if err := json.NewEncoder(g.ctl).Encode(m); err != nil {
		t.Fatalf("send %+v to the guard: %v", m, err)
	}
}

// closeControl closes the control channel (tenure went away).
func (g *guardProc) closeControl() {
	if g.ctl != nil {
		g.ctl.Close()
		g.ctl = nil
	}
}

// lease sends a lease whose deadline is in d (a TTL of 2 s).
func (g *guardProc) lease(t *testing.T, d time.Duration) {
	t.Helper()
	l := guard.Lease{Key: "k", Holder: "h", Token: 1, Deadline: boottime.Now().Add(d), TTLMs: 2000, Live: true}
	g.send(t, guard.Message{Op: guard.OpLease, Lease: &l})
}

// report waits up to d for the guard's next report; ok is false if none
// came (or the channel closed).
func (g *guardProc) report(d time.Duration) (r guard.Report, ok bool) {
	select {
	case r, ok = <-g.reports:
		return r, ok
	case <-time.After(d):
		return r, false
	}
}

// pidfds holds a pidfd for each process of a tree, to tell, whatever pids
// are reused, whether each is still alive: a pidfd is readable once the
// whole thread group has exited.
type pidfds map[int]int

// hold opens a pidfd for each of procs not held yet (a process already
// reaped is left out).
func (h pidfds) hold(t *testing.T, procs []guard.Proc) {
	for _, p := range procs {
		if _, ok := h[p.Pid]; ok {
			continue
		}
		fd, err := unix.PidfdOpen(p.Pid, 0)
		if err == nil {
			h[p.Pid] = fd
		} else if err != unix.ESRCH {
			t.Fatalf("pidfd_open %d: %v", p.Pid, err)
		}
	}
}

// alive returns the pids of the processes held that have a thread left.
func (h pidfds) alive() []int {
	var out []int
	for pid, fd := range h {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if n, err := unix.Poll(fds, 0); err == nil && n == 0 {
			out = append(out, pid)
		}
	}
	return out
}

// kill sends SIGKILL to every process held that lives (cleanup after a
// failure) and closes the pidfds.
func (h pidfds) kill() {
	for _, pid := range h.alive() {
		unix.PidfdSendSignal(h[pid], syscall.SIGKILL, nil, 0)
	}
	for pid, fd := range h {
		unix.Close(fd)
		delete(h, pid)
	}
}

// statFields are the fields of /proc/PID/stat after "(comm)": state, ppid,
// pgrp, session, …; nil if pid is gone.
func statFields(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	return strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
}
