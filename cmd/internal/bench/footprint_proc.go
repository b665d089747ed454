package bench

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/guard"
)

// clockTick is the unit of the CPU times in /proc/PID/stat: USER_HZ, 100
// a second on Linux whatever the kernel's own tick.
const clockTick = 10 * time.Millisecond

// procUsage is what one process (or several, summed) used: resident memory
// in bytes, all of it and its anonymous part (heap, stacks: not the
// binary's pages), and CPU time.
type procUsage struct {
	rss, anon int64
	cpu       time.Duration
}

func (u procUsage) plus(v procUsage) procUsage {
	return procUsage{rss: u.rss + v.rss, anon: u.anon + v.anon, cpu: u.cpu + v.cpu}
}

// since is u's CPU time since before (and u's resident memory).
func (u procUsage) since(before procUsage) procUsage {
	u.cpu -= before.cpu
	return u
}

// procStat is what bench reads from /proc/PID/stat.
type procStat struct {
	ppid int
	comm string
	cpu  time.Duration // user + system, every thread's, so far
}

// readStat reads /proc/PID/stat.
func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	return parseStat(b)
}

// parseStat parses a /proc/PID/stat line: "pid (comm) state ppid … utime
// stime …" (fields 14 and 15, in clock ticks), where comm may hold spaces
// and parentheses.
func parseStat(b []byte) (procStat, error) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return procStat{}, fmt.Errorf("stat line %q: no (comm)", b)
	}
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 13 {
		return procStat{}, fmt.Errorf("stat line %q: too short", b)
	}
	ppid, err1 := strconv.Atoi(f[1])
	utime, err2 := strconv.ParseInt(f[11], 10, 64)
	stime, err3 := strconv.ParseInt(f[12], 10, 64)
	for _, err := range []error{err1, err2, err3} {
		if err != nil {
			return procStat{}, fmt.Errorf("stat line %q: %w", b, err)
		}
	}
	return procStat{ppid: ppid, comm: string(b[open+1 : end]), cpu: time.Duration(utime+stime) * clockTick}, nil
}

// readUsage reads the resident memory (VmRSS) and CPU time of pid.
func readUsage(pid int) (procUsage, error) {
	st, err := readStat(pid)
	if err != nil {
		return procUsage{}, err
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procUsage{}, err
	}
	rss, err1 := statusBytes(b, "VmRSS")
	anon, err2 := statusBytes(b, "RssAnon")
	if err := errors.Join(err1, err2); err != nil {
		return procUsage{}, fmt.Errorf("/proc/%d/status: %w", pid, err)
	}
	return procUsage{rss: rss, anon: anon, cpu: st.cpu}, nil
}

// statusBytes returns the line of a /proc/PID/status named field
// ("VmRSS"), in bytes.
func statusBytes(status []byte, field string) (int64, error) {
	for line := range strings.Lines(string(status)) {
		rest, ok := strings.CutPrefix(line, field+":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("%s line %q: want N kB", field, line)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s line %q: %w", field, line, err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("no %s line (a zombie, or a kernel thread)", field)
}

// childrenNamed returns the processes whose parent is pid and whose name
// (comm) is name.
func childrenNamed(pid int, name string) ([]int, error) {
	procs, err := guard.Descendants("/proc", pid)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, p := range procs {
		if p.PPid != pid {
			continue // a grandchild
		}
		if st, err := readStat(p.Pid); err == nil && st.comm == name {
			out = append(out, p.Pid)
		}
	}
	return out, nil
}
