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
	// childless: the kernel said, when reap last asked, that the guard
	// has no child at all, exited or not (see gone).
	childless bool
	reaped    int // how many children reap has reaped
	// scouted holds a pidfd for each process of the tree the last scout
	// found: a process of the tree stays in it, and a pidfd names its
	// process whatever pids are reused.
	scouted []int
	// pids holds the pid of each process of scouted, in the same order:
	// its process group is read when the tree is signalled (see
	// signalGroups).
	pids []int
	// noLists: the kernel keeps no children lists, and walk sweeps.
	noLists bool
}

// Reading /proc takes time in proportion to the processes read: the
// tree's for a walk, the host's for a sweep (a few thousand processes on
// two loaded cores: hundreds of milliseconds). So everything but the kill
// reads /proc, and signals the processes found one by one, only until the
// kill falls due (its stop, from state's due, says so): then it ends, and
// the kill, which goes to the scouted processes first and reads on to the
// end, follows at once. A forwarded SIGTERM, a Ctrl-Z, the freeze or a
// scout that began before the kill fell due never holds it back.

// scout walks the tree and holds a pidfd for each of its live processes
// (see scouted), in place of those the last scout held. Before the command
// starts, and without pidfds (Linux < 5.3), it holds none. A walk cut short
// (the kill fell due) or blind keeps those the last scout held: they are
// still the tree's.
func (t *procTree) scout(due func() bool) {
	if t.main == 0 {
		return
	}
	procs, ok := t.walk(due)
	if !ok {
		return
	}
	for _, fd := range t.scouted {
		_ = unix.Close(fd)
	}
	t.scouted, t.pids = t.scouted[:0], t.pids[:0]
	procs = alive(procs)
	ours := t.ours(procs)
	for _, p := range procs {
		if fd, err := openOurs(p, ours, t.self); err == nil {
			t.scouted, t.pids = append(t.scouted, fd), append(t.pids, p.Pid)
		}
	}
}

// signalGroups sends sig to the process group each scouted process is in
// now, once per group, but the guard's own: it reads the group's id
// (getpgid), then checks with the process's pidfd that the process is
// still there, exited or not, so that the pid it read named it and the
// group holds it (a process that moved to another group since has its
// new group signalled, as has one whose group's leader is gone). In a
// wide tree most processes are often in a few groups, and a signal to
// each reaches them all long before the scouted processes have each had
// theirs.
func (t *procTree) signalGroups(sig syscall.Signal) {
	done := map[int]bool{t.selfPgid: true}
	for i, pid := range t.pids {
		pgid, err := unix.Getpgid(pid)
		if err != nil || pgid <= 0 || done[pgid] {
			continue
		}
		if unix.PidfdSendSignal(t.scouted[i], 0, nil, 0) == nil {
			done[pgid] = true
			_ = syscall.Kill(-pgid, sig)
		}
	}
}

// signalScouted sends sig to each process the last scout found, at once:
// no walk of /proc comes first. Only SIGSTOP and SIGKILL go there, which a
// process may get twice without harm.
func (t *procTree) signalScouted(sig syscall.Signal) {
	t.signalGroups(sig)
	for _, fd := range t.scouted {
		_ = unix.PidfdSendSignal(fd, sig, nil, 0)
	}
}

// freeze sends SIGSTOP as signal does, until the kill falls due (see
// signaller.freeze): the process groups of the guard's children first
// (the command's, one signal for every process in it), then the groups
// the scouted processes are in, then the scouted processes, then those
// walk finds, then those sweep finds.
func (t *procTree) freeze(stop func() bool) {
	t.signalHeld(nil, syscall.SIGSTOP)
	t.signalGroups(syscall.SIGSTOP)
	for i, fd := range t.scouted {
		if stopped(stop, i) {
			return
		}
		_ = unix.PidfdSendSignal(fd, syscall.SIGSTOP, nil, 0)
	}
	if t.signalFound(t.walk, syscall.SIGSTOP, stop); t.noLists {
		return // walk swept
	}
	t.signalFound(t.sweep, syscall.SIGSTOP, stop)
}

// killRound bounds how long one call of kill keeps finding new processes
// to kill; the guard calls it again while any is left.
const killRound = 100 * time.Millisecond

// live returns the descendants that are alive (see Proc.Alive). When /proc
// does not show the guard itself (it cannot be read, or a file system was
// mounted over it after the guard started), the guard cannot tell which
// processes are left: live then returns just blind.
func (t *procTree) live() []Proc {
	procs, ok := t.sweep(nil)
	if !ok {
		return []Proc{blind}
	}
	return alive(procs)
}

// walk returns every descendant the kernel's children lists show, zombies
// among them (see Family: reading only the tree's processes, it takes a
// fraction of sweep's time on a host with many processes); ok is false
// when /proc does not show the guard itself. A list read while a process
// leaves it may have skipped a process: what must reach every process
// (the freeze, the kill) walks again by sweep after it. Without the lists
// (CONFIG_PROC_CHILDREN unset), it sweeps. ok is false too when stop (nil:
// never) cut it short.
func (t *procTree) walk(stop func() bool) (procs []Proc, ok bool) {
	procs, err := family("/proc", t.self, stop)
	if errors.Is(err, ErrNoChildrenLists) {
		t.noLists = true
		return t.sweep(stop)
	}
	if err != nil || !seen(t.self) {
		return nil, false
	}
	return procs, true
}

// sweep returns every descendant /proc shows, zombies among them, from the
// stat line of every process on the host, where no list can skip one; ok
// is false when /proc does not show the guard itself, or when stop (nil:
// never) cut it short.
func (t *procTree) sweep(stop func() bool) (procs []Proc, ok bool) {
	procs, err := descendants("/proc", t.self, stop)
	if err != nil || !seen(t.self) {
		return nil, false
	}
	return procs, true
}

// alive returns the processes of procs that are alive.
func alive(procs []Proc) []Proc {
	var out []Proc
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

// gone reaps the children that have exited and reports whether the tree
// is gone: the kernel says the guard has no child left, exited or not.
// That answer is exact, whatever /proc shows: every process of the tree
// descends from a child of the guard, because a process whose parent
// exits is handed to the guard (a child subreaper), never to init, before
// its parent turns zombie; and a zombie leader whose threads run on, a
// stopped or traced child, stay the guard's children until they have
// exited and been reaped.
func (t *procTree) gone() bool {
	t.reap()
	return t.childless
}

// signal sends sig to every process group of the tree that one of its
// processes leads (the command's among them) or that holds a child of the
// guard (see signalHeld), and to each process of the tree outside those
// groups. The guard's own group is never signalled.
//
// SIGSTOP and SIGKILL, which a process may get twice without harm, reach
// the processes the last scout found first, then those walk finds, and
// only then those sweep finds (which walk may have skipped): the freeze
// lands before the guard reads every process of the host. Other signals
// go once, to the processes sweep finds. It ends once stop (the state's
// due) says the kill is due (see procTree).
func (t *procTree) signal(sig syscall.Signal, stop func() bool) {
	if sig == syscall.SIGSTOP || sig == syscall.SIGKILL {
		t.signalScouted(sig) // before the walk: see signaller.scout
		if t.signalFound(t.walk, sig, stop); t.noLists {
			return // walk swept
		}
	}
	t.signalFound(t.sweep, sig, stop)
}

// signalFound sends sig to the tree's processes and groups that find
// returns (see signalAll, signalHeld), until stop (nil: never) says to
// stop; nothing when find is blind or stopped.
func (t *procTree) signalFound(find func(stop func() bool) ([]Proc, bool), sig syscall.Signal, stop func() bool) {
	if procs, ok := find(stop); ok {
		// Before reaping: reaped, a child no longer holds its group.
		t.signalAll(alive(procs), sig, t.signalHeld(procs, sig), stop)
	}
}

// signalHeld sends sig to the process group of each child of the guard
// (but the guard's own group), found in procs or in the kernel's list of
// the guard's children. A child keeps its pid, and its group's id, from
// being reused until the guard reaps it, exited or not; so the signal
// reaches that group and no other, unless a live child left it for
// another in the instant since it was read. Such groups may hold processes
// no reading of /proc sees alive: a chain of processes each of which forks
// its successor and exits at once, each the guard's child from its
// parent's exit until the guard reaps it. A signal to a group reaches every
// process in it, a fork under way included. It returns the groups
// signalled, and the guard's own.
func (t *procTree) signalHeld(procs []Proc, sig syscall.Signal) (done map[int]bool) {
	done = map[int]bool{t.selfPgid: true}
	send := func(p Proc) {
		if p.PPid == t.self && p.Pgid > 0 && !done[p.Pgid] {
			done[p.Pgid] = true
			_ = syscall.Kill(-p.Pgid, sig)
		}
	}
	for _, p := range procs {
		send(p)
	}
	for _, pid := range t.children() {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
			if p, err := ParseStat(b); err == nil {
				send(p)
			}
		}
	}
	return done
}

// children returns the guard's children, exited or not, as its threads'
// children lists name them (see childrenOf; none on a kernel without
// CONFIG_PROC_CHILDREN).
func (t *procTree) children() []int {
	pids, _, _ := childrenOf("/proc", t.self)
	return pids
}

// signalAll sends sig to every process group one of procs leads (the
// command's among them) but those in done, which it adds them to, and to
// each of procs outside the groups in done (to all of them for SIGKILL).
// A process of the tree in the guard's own group, which no group signal
// reaches, gets every signal on its own. It ends once stop (nil: never)
// says so.
func (t *procTree) signalAll(procs []Proc, sig syscall.Signal, done map[int]bool, stop func() bool) {
	procs = slices.DeleteFunc(slices.Clone(procs), func(p Proc) bool { return p == blind })
	ours := t.ours(procs)
	for _, p := range procs {
		if p.Pgid != t.selfPgid && ours[p.Pgid] && !done[p.Pgid] {
			done[p.Pgid] = true
			_ = syscall.Kill(-p.Pgid, sig)
		}
	}
	for i, p := range procs {
		if stopped(stop, i) {
			return
		}
		if !done[p.Pgid] || sig == syscall.SIGKILL || p.Pgid == t.selfPgid {
			signalProc(p, ours, t.self, sig)
		}
	}
}

// ours is the set of the pids of procs, processes of the tree as a walk
// found them, and the command's.
func (t *procTree) ours(procs []Proc) map[int]bool {
	ours := map[int]bool{}
	if t.main != 0 {
		ours[t.main] = true
	}
	for _, p := range procs {
		ours[p.Pid] = true
	}
	return ours
}

// signalProc sends sig to p through a pidfd (see openOurs). Without pidfds
// (Linux < 5.3) it falls back to kill(2).
func signalProc(p Proc, ours map[int]bool, self int, sig syscall.Signal) {
	fd, err := openOurs(p, ours, self)
	if errors.Is(err, unix.ENOSYS) {
		_ = syscall.Kill(p.Pid, sig)
		return
	}
	if err == nil {
		_ = unix.PidfdSendSignal(fd, sig, nil, 0)
		_ = unix.Close(fd)
	}
}

// errNotOurs: the process a pidfd holds is not in the tree (any more).
var errNotOurs = errors.New("not in the tree")

// openOurs opens a pidfd for p once it has checked that the process the
// pidfd holds is still in the tree (its parent is the guard, self, or one
// of ours): a process that exited since /proc was read may have had its id
// reused by an unrelated process.
func openOurs(p Proc, ours map[int]bool, self int) (int, error) {
	fd, err := unix.PidfdOpen(p.Pid, 0)
	if err != nil {
		return -1, err // gone, or no pidfds
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.Pid) + "/stat")
	if err != nil {
		_ = unix.Close(fd)
		return -1, err
	}
	if q, err := ParseStat(b); err != nil || q.PPid != self && !ours[q.PPid] {
		_ = unix.Close(fd)
		return -1, errNotOurs
	}
	return fd, nil
}

// kill sends SIGKILL to every process of the tree, again and again,
// reaping as it goes, until the tree is gone (see gone) or killRound has
// passed: what survives it (a process the guard may not signal, one /proc
// does not show it, a chain forking faster than it reads /proc) is the
// caller's to kill again. A process with SIGKILL pending cannot fork: a
// fork under way fails, so each process killed adds none.
func (t *procTree) kill() {
	t.signalHeld(nil, syscall.SIGKILL) // the command's group: one signal for every process in it
	t.signalScouted(syscall.SIGKILL)   // before the walk: see signaller.scout
	began := time.Now()
	for first := true; ; first = false {
		t.signalFound(t.walk, syscall.SIGKILL, nil)
		if first && !t.noLists {
			t.signalFound(t.sweep, syscall.SIGKILL, nil) // what walk may skip
		}
		reaped := t.reaped
		if t.gone() || time.Since(began) > killRound {
			return
		}
		if t.reaped == reaped {
			time.Sleep(time.Millisecond) // nothing ended: a survivor, not a chain
			continue
		}
		t.killChildren(churn)
	}
}

// churn is how long kill sends SIGKILL to the guard's children over and
// over (killChildren) once a walk of /proc has left processes that went
// on to exit: what forks and exits at once may be among them.
const churn = 10 * time.Millisecond

// killChildren sends SIGKILL to each child of the guard (see children),
// again and again for d: a read far quicker than a walk of /proc, so it
// more often catches a process of a chain that forks and exits at once
// before its fork ends. Without the children lists it just waits d.
func (t *procTree) killChildren(d time.Duration) {
	for began := time.Now(); time.Since(began) < d; {
		pids := t.children()
		if len(pids) == 0 {
			time.Sleep(d - time.Since(began))
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// reap waits for every child that has exited, recording the command's
// status, and whether the guard has no child left (childless). __WALL:
// children whose exit signal is not SIGCHLD count too.
func (t *procTree) reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG|syscall.WALL, nil)
		if err == syscall.EINTR {
			continue
		}
		t.childless = err == syscall.ECHILD
		if pid <= 0 || err != nil {
			return
		}
		t.reaped++
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
