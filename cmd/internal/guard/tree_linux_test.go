package guard

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestParseStat(t *testing.T) {
	p, err := ParseStat([]byte("4242 (a (b) c) S 17 4240 4240 0 -1 4194560"))
	if err != nil {
		t.Fatal(err)
	}
	if p != (Proc{Pid: 4242, PPid: 17, Pgid: 4240, State: 'S'}) {
		t.Errorf("parseStat = %+v; want pid 4242 ppid 17 pgid 4240 state S", p)
	}
	for _, bad := range []string{"", "12 noparen S 1 1", "12 (x) S 1", "x (y) S 1 2"} {
		if _, err := ParseStat([]byte(bad)); err == nil {
			t.Errorf("ParseStat(%q): nil error", bad)
		}
	}
}

// TestDescendantsOf: the walk follows parent links from the root through
// any depth and leaves out everything else.
func TestDescendantsOf(t *testing.T) {
	all := []Proc{
		{Pid: 1, PPid: 0}, {Pid: 10, PPid: 1}, {Pid: 11, PPid: 10}, {Pid: 12, PPid: 11},
		{Pid: 13, PPid: 10, State: 'Z'}, {Pid: 20, PPid: 1}, {Pid: 21, PPid: 20},
	}
	var got []int
	for _, p := range descendantsOf(all, 10) {
		got = append(got, p.Pid)
	}
	slices.Sort(got)
	if want := []int{11, 12, 13}; !slices.Equal(got, want) {
		t.Fatalf("descendants of 10 = %v; want %v", got, want)
	}
}

// TestFamily: Family follows the children list of every thread of each
// process down from the root (a child on the list of a thread other than
// the leader included), leaves out a listed pid whose stat line names a
// parent outside the tree (the pid reused by a stranger), keeps one
// reparented to the root since its list was read, and says when there are
// no lists at all.
func TestFamily(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// 10 (the root, two threads) → 11, 12 (on thread 13's list), 14 (a
	// stranger now: parent 99), 15 (reparented to 10 since 11 listed it);
	// 12 → 16 (zombie).
	write("10/task/10/children", "11 14 ")
	write("10/task/13/children", "12 ")
	write("11/stat", "11 (a) S 10 11 11")
	write("11/task/11/children", "15 ")
	write("12/stat", "12 (b c) S 10 10 10")
	write("12/task/12/children", "16")
	write("12/task/17/children", "")
	write("14/stat", "14 (x) S 99 14 14")
	write("14/task/14/children", "")
	write("15/stat", "15 (d) S 10 15 15")
	write("15/task/15/children", "")
	write("16/stat", "16 (e) Z 12 10 10")
	write("16/task/16/children", "")
	procs, err := Family(dir, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, p := range procs {
		if p.PPid != 10 && !slices.Contains(got, p.PPid) {
			t.Errorf("Family = %+v: %d before its parent", procs, p.Pid)
		}
		got = append(got, p.Pid)
	}
	slices.Sort(got)
	if want := []int{11, 12, 15, 16}; !slices.Equal(got, want) {
		t.Errorf("Family = %v; want %v", got, want)
	}
	write("20/task/20/stat", "20 (f) S 1 20 20")
	if _, err := Family(dir, 20); !errors.Is(err, ErrNoChildrenLists) {
		t.Errorf("Family with no children lists: %v; want ErrNoChildrenLists", err)
	}
	if _, err := Family(dir, 21); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Family of a process that is not there: %v; want not exist", err)
	}
}

// TestKillTree: a command that forks without exec, starts a grandchild in
// a session of its own, and orphans a great-grandchild (reparented to this
// test process, a subreaper like the guard) is found whole and killed
// whole.
func TestKillTree(t *testing.T) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatalf("PR_SET_CHILD_SUBREAPER: %v", err)
	}
	script := `(while :; do sleep 1; done) &
setsid sh -c 'sleep 60 & (sleep 61 &) ; sleep 62' &
wait`
	pid, err := startCommand("/bin/sh", []string{"sh", "-c", script}, filepath.Join(t.TempDir(), "lease.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	tree := &procTree{self: os.Getpid(), selfPgid: syscall.Getpgrp(), main: pid}
	t.Cleanup(tree.kill)
	// sh, its subshell and the subshell's sleep, the setsid'd sh, sleep 60,
	// sleep 62, and the orphaned sleep 61 (once the subshell that started
	// it has exited): 7 processes in two groups, one of them an orphan.
	var procs []Proc
	whole := func() bool {
		procs = tree.live()
		orphan, groups := false, map[int]bool{}
		for _, p := range procs {
			groups[p.Pgid] = true
			if p.PPid == os.Getpid() && p.Pid != pid {
				orphan = true
			}
		}
		return len(procs) >= 7 && orphan && len(groups) >= 2
	}
	for began := time.Now(); !whole(); time.Sleep(20 * time.Millisecond) {
		if time.Since(began) > 10*time.Second {
			t.Fatalf("tree %+v: want 7 processes in two groups, one an orphan reparented to this process", procs)
		}
	}
	// As the guard does: kill again while anything is left (one round is
	// bounded by killRound, which a loaded machine may outlast).
	for began := time.Now(); ; {
		tree.kill()
		if tree.gone() && tree.exited || time.Since(began) > 20*time.Second {
			break
		}
	}
	for _, p := range procs {
		if _, err := os.Stat("/proc/" + strconv.Itoa(p.Pid)); err == nil {
			if b, _ := os.ReadFile("/proc/" + strconv.Itoa(p.Pid) + "/stat"); len(b) > 0 {
				if q, err := ParseStat(b); err == nil && q.PPid == p.PPid && !q.Zombie() {
					t.Errorf("process %d (%+v) alive after kill", p.Pid, q)
				}
			}
		}
	}
	if !tree.exited || !tree.status.Signaled() || tree.status.Signal() != syscall.SIGKILL {
		t.Errorf("command reaped %v with status %v; want reaped, killed by SIGKILL", tree.exited, tree.status)
	}
	if r := tree.report(true, false); r.Code != 128+9 || !r.Killed {
		t.Errorf("report %+v; want code 137, killed", r)
	}
}

// TestScoutedSignalledFirst: a process the scout found gets the freeze's
// SIGSTOP and the deadline's SIGKILL (kill) through the pidfd the scout holds,
// before (here: without) any walk of /proc. The walk is made blind: the
// tree's root (the guard's place here, a shell) is gone once its child,
// sleep, was scouted, so no walk finds sleep again.
func TestScoutedSignalledFirst(t *testing.T) {
	dir := t.TempDir()
	sh := exec.Command("/bin/sh", "-c", "sleep 60 & echo $! >"+filepath.Join(dir, "pid")+"; wait")
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	tree := &procTree{self: sh.Process.Pid, selfPgid: syscall.Getpgrp(), main: sh.Process.Pid}
	var sleep []Proc
	for began := time.Now(); len(sleep) != 1 || sleep[0].State != 'S'; time.Sleep(10 * time.Millisecond) {
		if time.Since(began) > 10*time.Second {
			sh.Process.Kill()
			sh.Wait()
			t.Fatalf("the shell's tree is %+v; want one sleep, sleeping", sleep)
		}
		sleep = tree.live()
	}
	tree.scout(never)
	held, err := unix.PidfdOpen(sleep[0].Pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(held)
	t.Cleanup(func() {
		unix.PidfdSendSignal(held, syscall.SIGKILL, nil, 0)
		// Reparented to this process if an earlier test made it a subreaper.
		syscall.Wait4(sleep[0].Pid, nil, syscall.WNOHANG, nil)
	})
	sh.Process.Kill()
	sh.Wait()
	if procs, ok := tree.walk(nil); ok {
		t.Fatalf("the walk still finds %+v after the root was reaped; want it blind", procs)
	}

	tree.signal(syscall.SIGSTOP, never)
	state := func() byte {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(sleep[0].Pid) + "/stat")
		if err != nil {
			return 0
		}
		p, _ := ParseStat(b)
		return p.State
	}
	for began := time.Now(); state() != 'T'; time.Sleep(time.Millisecond) {
		if time.Since(began) > 5*time.Second {
			t.Fatalf("sleep (pid %d) in state %c 5 s after the freeze; want T (stopped) by the scout's pidfd", sleep[0].Pid, state())
		}
	}
	tree.kill() // the deadline's; its reaping finds no child of this process but, maybe, sleep
	fds := []unix.PollFd{{Fd: int32(held), Events: unix.POLLIN}}
	if n, err := unix.Poll(fds, 5000); err != nil || n == 0 {
		t.Errorf("sleep (pid %d, state %c) alive 5 s after SIGKILL; want killed by the scout's pidfd", sleep[0].Pid, state())
	}
}

// TestSignalStopsWhenDue: a signal sent while the kill is due reads no
// further in /proc, and so reaches no process it would have found there
// (the kill follows at once, and reads to the end); sent while it is not,
// it reaches them all.
func TestSignalStopsWhenDue(t *testing.T) {
	sh := exec.Command("/bin/sh", "-c", "sleep 60 & sleep 60 & wait")
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-sh.Process.Pid, syscall.SIGKILL)
		sh.Wait()
	})
	tree := &procTree{self: sh.Process.Pid, selfPgid: syscall.Getpgrp(), main: sh.Process.Pid}
	var sleeps []Proc
	for began := time.Now(); len(sleeps) != 2; time.Sleep(10 * time.Millisecond) {
		if time.Since(began) > 10*time.Second {
			t.Fatalf("the shell's tree is %+v; want two sleeps", sleeps)
		}
		sleeps = tree.live()
	}
	stoppedOnes := func() (n int) {
		for _, p := range sleeps {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(p.Pid) + "/stat")
			if q, perr := ParseStat(b); err == nil && perr == nil && q.State == 'T' {
				n++
			}
		}
		return n
	}
	tree.signal(syscall.SIGSTOP, func() bool { return true })
	time.Sleep(100 * time.Millisecond)
	if n := stoppedOnes(); n != 0 {
		t.Errorf("%d of the sleeps stopped by a signal sent when the kill was due; want none: it reads no further", n)
	}
	tree.signal(syscall.SIGSTOP, never)
	for began := time.Now(); stoppedOnes() != 2; time.Sleep(time.Millisecond) {
		if time.Since(began) > 5*time.Second {
			t.Fatalf("%d of 2 sleeps stopped 5 s after SIGSTOP; want both", stoppedOnes())
		}
	}
	if _, err := descendants("/proc", 1, func() bool { return true }); !errors.Is(err, errStopped) {
		t.Errorf("a sweep stopped at once returned %v; want errStopped", err)
	}
	if _, err := family("/proc", 1, func() bool { return true }); !errors.Is(err, errStopped) {
		t.Errorf("a walk stopped at once returned %v; want errStopped", err)
	}
}
