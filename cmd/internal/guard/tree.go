package guard

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// A Proc is one process found in /proc.
type Proc struct {
	Pid, PPid, Pgid int
	State           byte // R, S, D, T, Z, …
}

// Zombie reports whether /proc shows the process as exited (Z or X): its
// thread-group leader has exited. Its other threads may still run (a main
// that ended with pthread_exit): see Alive.
func (p Proc) Zombie() bool { return p.State == 'Z' || p.State == 'X' }

// Descendants returns every process whose parent chain leads to root
// (root excluded), read from procDir (normally "/proc"), parents before
// their children.
func Descendants(procDir string, root int) ([]Proc, error) {
	return descendants(procDir, root, nil)
}

// descendants is Descendants, cut short with errStopped once stop (nil:
// never) says so; it asks every stopEvery processes read.
func descendants(procDir string, root int, stop func() bool) ([]Proc, error) {
	all, err := readProcs(procDir, stop)
	if err != nil {
		return nil, err
	}
	return descendantsOf(all, root), nil
}

// errStopped: a read of /proc was cut short, since the caller's stop said
// so (the kill fell due: see procTree).
var errStopped = errors.New("read of /proc stopped")

// stopEvery is how many processes a read of /proc, or a signal to each
// process, goes through between two calls of its stop (a stat line read
// took 10-20 µs, a pidfd signal up to 0.4 ms, on two loaded cores).
const stopEvery = 32

// stopped reports whether stop (nil: never) says to stop at the i-th
// process of a loop.
func stopped(stop func() bool, i int) bool {
	return stop != nil && i%stopEvery == 0 && stop()
}

// ErrNoChildrenLists: the kernel keeps no children lists in procDir
// (CONFIG_PROC_CHILDREN unset), or procDir is not a proc file system.
var ErrNoChildrenLists = errors.New("no children lists in /proc/PID/task/TID/children")

// Family returns what Descendants does, found by following down from root
// the children lists the kernel keeps, one per thread, in
// procDir/PID/task/TID/children: it reads the stat lines of the tree's
// processes only, where Descendants reads every process's on the host.
// Each list names the processes whose parent is that thread, zombies
// among them; an orphan shows in the list of a live thread of its parent
// (a thread-group leader's orphans pass to another of its threads) or of
// the subreaper (or init) it passed to. A list is exact unless a process
// leaves it while it is read (it exits and is reaped, or is reparented):
// the kernel may then skip others in it, and Family miss them (and their
// descendants) until it is called again. It returns the error of reading
// root's thread list, or ErrNoChildrenLists.
func Family(procDir string, root int) ([]Proc, error) {
	return family(procDir, root, nil)
}

// family is Family, cut short with errStopped once stop (nil: never) says
// so; it asks every stopEvery processes read.
func family(procDir string, root int, stop func() bool) ([]Proc, error) {
	kids, listed, err := childrenOf(procDir, root)
	if err != nil {
		return nil, err
	}
	if !listed {
		return nil, ErrNoChildrenLists
	}
	var out []Proc
	seen := map[int]bool{root: true}
	reads := 0
	for i := -1; i < len(out); i++ {
		parent := root
		if i >= 0 {
			parent = out[i].Pid
			kids, _, _ = childrenOf(procDir, parent)
		}
		for _, pid := range kids {
			if seen[pid] {
				continue
			}
			if stopped(stop, reads) {
				return nil, errStopped
			}
			reads++
			b, err := os.ReadFile(procDir + "/" + strconv.Itoa(pid) + "/stat")
			if err != nil {
				continue // gone
			}
			// Its parent is the one whose list named it, or, reparented
			// since, the subreaper root: not, its pid reused, a stranger.
			if p, err := ParseStat(b); err == nil && (p.PPid == parent || seen[p.PPid]) {
				seen[pid] = true
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// childrenOf returns the children of process pid, as the children lists of
// its threads name them; listed is false if no list could be read. err is
// the error of reading its thread list (pid gone, or never there).
func childrenOf(procDir string, pid int) (kids []int, listed bool, err error) {
	dir := procDir + "/" + strconv.Itoa(pid) + "/task/"
	d, err := os.Open(dir)
	if err != nil {
		return nil, false, err
	}
	tids, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, false, err
	}
	for _, tid := range tids {
		b, err := os.ReadFile(dir + tid + "/children")
		if err != nil {
			continue // the thread exited, or there are no lists
		}
		listed = true
		for _, f := range strings.Fields(string(b)) {
			if k, err := strconv.Atoi(f); err == nil && k > 0 {
				kids = append(kids, k)
			}
		}
	}
	return kids, listed, nil
}

// descendantsOf walks the parent links of all from root, breadth first.
func descendantsOf(all []Proc, root int) []Proc {
	children := map[int][]Proc{}
	for _, p := range all {
		if p.Pid != root {
			children[p.PPid] = append(children[p.PPid], p)
		}
	}
	var out []Proc
	queue := []int{root}
	seen := map[int]bool{root: true}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			if !seen[c.Pid] {
				seen[c.Pid] = true
				out = append(out, c)
				queue = append(queue, c.Pid)
			}
		}
	}
	return out
}

// readProcs reads the stat line of every process in procDir. Processes that
// vanish while it reads are left out. It ends with errStopped once stop
// (nil: never) says so.
func readProcs(procDir string, stop func() bool) ([]Proc, error) {
	d, err := os.Open(procDir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	var out []Proc
	reads := 0
	for _, name := range names {
		if name == "" || name[0] < '0' || name[0] > '9' {
			continue
		}
		if stopped(stop, reads) {
			return nil, errStopped
		}
		reads++
		b, err := os.ReadFile(procDir + "/" + name + "/stat")
		if err != nil {
			continue // gone
		}
		if p, err := ParseStat(b); err == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// ParseStat parses /proc/PID/stat: "pid (comm) state ppid pgrp …", where
// comm may hold spaces and parentheses.
func ParseStat(b []byte) (Proc, error) {
	var p Proc
	open := bytes.IndexByte(b, '(')
	i := bytes.LastIndexByte(b, ')')
	if open < 1 || i < open {
		return p, fmt.Errorf("stat line %q: no (comm)", b)
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return p, fmt.Errorf("stat line %q: too short", b)
	}
	var err [3]error
	p.Pid, err[0] = strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	p.PPid, err[1] = strconv.Atoi(string(f[1]))
	p.Pgid, err[2] = strconv.Atoi(string(f[2]))
	for _, e := range err {
		if e != nil {
			return p, fmt.Errorf("stat line %q: %w", b, e)
		}
	}
	p.State = f[0][0]
	return p, nil
}
