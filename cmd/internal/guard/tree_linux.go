//go:build linux

package guard

import (
	"errors"
	"os"
	"slices"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// procTree is the command's process tree: every descendant of the guard,
// which, as a child subreaper, also inherits the orphans among them.
type procTree struct {
	self, selfPgid int
	main           int // the command's pid (and process group)

	exited bool // the command has been reaped
	status syscall.WaitStatus
}

// killRound bounds how long one call of kill keeps finding new processes
// to kill; the guard calls it again while any is left.
const killRound = 100 * time.Millisecond

// live returns the descendants that are alive (see Proc.Alive). When /proc
// does not show the guard itself (it cannot be read, or a file system was
// mounted over it after the guard started), the guard cannot tell which
// processes are left: live then returns just blind, and the tree is never
// empty.
func (t *procTree) live() []Proc {
	procs, err := Descendants("/proc", t.self)
	if err != nil || !seen(t.self) {
		return []Proc{blind}
	}
	out := procs[:0]
	for _, p := range procs {
		if p.Alive() {
			out = append(out, p)
		}
	}
	return out
}

// blind stands for the processes of the tree that /proc does not show: it
// is never signalled.
var blind = Proc{Pid: -1, PPid: -1, Pgid: -1, State: '?'}

// seen reports whether /proc shows process pid.
func seen(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil
}

// Alive reports whether a thread of the process has not exited, whatever
// its state letter: a process whose thread-group leader ended with
// pthread_exit shows as a zombie (Z) while its other threads run on, and
// is alive; SIGKILL to its pid kills them all. A zombie none of whose
// threads runs is not alive, reaped yet or not.
func (p Proc) Alive() bool { return !p.Zombie() || threadsLeft(p.Pid) }

// threadsLeft reports whether process pid, which /proc shows as a zombie,
// has a thread that has not exited, as the kernel says it: a pidfd becomes
// readable once the whole thread group has exited. Without pidfds (Linux
// < 5.3) it reads the threads' states in /proc/PID/task.
func threadsLeft(pid int) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return false // reaped
	}
	if err != nil {
		return tasksLeft(pid)
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return tasksLeft(pid)
		}
		return n == 0
	}
}

// tasksLeft reports whether a thread of process pid, in /proc/PID/task, is
// not a zombie.
func tasksLeft(pid int) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	d, err := os.Open(dir)
	if err != nil {
		return false // reaped
	}
	defer d.Close()
	tids, _ := d.Readdirnames(-1)
	for _, tid := range tids {
		b, err := os.ReadFile(dir + "/" + tid + "/stat")
		if err != nil {
			continue // gone
		}
		if q, err := ParseStat(b); err == nil && !q.Zombie() {
			return true
		}
	}
	return false
}

func (t *procTree) empty() bool { return len(t.live()) == 0 }

// signal sends sig to every process group of the tree that one of its
// processes leads (the command's among them), and to each process of the
// tree outside those groups. The guard's own group is never signalled.
func (t *procTree) signal(sig syscall.Signal) {
	t.signalAll(t.live(), sig)
}

func (t *procTree) signalAll(procs []Proc, sig syscall.Signal) {
	ours := map[int]bool{}
	if t.main != 0 {
		ours[t.main] = true
	}
	procs = slices.DeleteFunc(slices.Clone(procs), func(p Proc) bool { return p == blind })
	for _, p := range procs {
		ours[p.Pid] = true
	}
	done := map[int]bool{}
	for _, p := range procs {
		if p.Pgid != t.selfPgid && ours[p.Pgid] && !done[p.Pgid] {
			done[p.Pgid] = true
			_ = syscall.Kill(-p.Pgid, sig)
		}
	}
	for _, p := range procs {
		if !done[p.Pgid] || sig == syscall.SIGKILL {
			signalProc(p, ours, t.self, sig)
		}
	}
}

// signalProc sends sig to p, through a pidfd, once it has checked that the
// process the pidfd holds is still in the tree (its parent is the guard or
// one of ours): a process that exited since /proc was read may have had its
// id reused by an unrelated process. Without pidfds (Linux < 5.3) it falls
// back to kill(2).
func signalProc(p Proc, ours map[int]bool, self int, sig syscall.Signal) {
	fd, err := unix.PidfdOpen(p.Pid, 0)
	if errors.Is(err, unix.ENOSYS) {
		_ = syscall.Kill(p.Pid, sig)
		return
	}
	if err != nil {
		return // gone
	}
	defer unix.Close(fd)
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.Pid) + "/stat")
	if err != nil {
		return
	}
	if q, err := ParseStat(b); err != nil || q.PPid != self && !ours[q.PPid] {
		return // not ours (any more)
	}
	_ = unix.PidfdSendSignal(fd, sig, nil, 0)
}

// kill sends SIGKILL to every process of the tree, again and again, reaping
// as it goes, until none is left or killRound has passed: a process that
// survives it (one the guard may not signal, say) is the caller's to kill
// again.
func (t *procTree) kill() {
	began := time.Now()
	emptyOnce := false
	for {
		procs := t.live()
		// A process whose parent vanished while /proc was read is missed
		// by that one walk (its stat still names the parent); the next
		// read finds it reparented to the guard. So the tree is empty
		// only when two reads in a row say so.
		if len(procs) == 0 && emptyOnce || time.Since(began) > killRound {
			t.reap()
			return
		}
		emptyOnce = len(procs) == 0
		t.signalAll(procs, syscall.SIGKILL)
		t.reap()
		time.Sleep(time.Millisecond)
	}
}

// reap waits for every child that has exited, recording the command's
// status.
func (t *procTree) reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
		if pid == t.main {
			t.exited, t.status = true, ws
		}
	}
}

// report says how the command ended.
func (t *procTree) report(killed, expired bool) Report {
	r := Report{Exited: true, Killed: killed, Expired: expired}
	switch {
	case t.status.Signaled():
		r.Code = 128 + int(t.status.Signal())
		r.Status = "signal: " + t.status.Signal().String()
	default:
		r.Code = t.status.ExitStatus()
		r.Status = "exit status " + strconv.Itoa(r.Code)
	}
	return r
}
