package guard

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
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
	all, err := readProcs(procDir)
	if err != nil {
		return nil, err
	}
	return descendantsOf(all, root), nil
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
// vanish while it reads are left out.
func readProcs(procDir string) ([]Proc, error) {
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
	for _, name := range names {
		if name == "" || name[0] < '0' || name[0] > '9' {
			continue
		}
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
