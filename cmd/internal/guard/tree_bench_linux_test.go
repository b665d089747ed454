package guard

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// BenchmarkWalk times one walk of a tree of 10 processes (this process's:
// a shell and its sleeps) by the children lists (walk, Family) and by every
// process's stat line (sweep, Descendants), with the host as it is and
// with 2000 more processes outside the tree (sleeps in a session of their
// own, orphaned to init or a subreaper above this process). procs/host is
// how many processes /proc showed.
func BenchmarkWalk(b *testing.B) {
	tree := exec.Command("/bin/sh", "-c", "for i in 1 2 3 4 5 6 7 8 9; do sleep 600 & done; wait")
	tree.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := tree.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		syscall.Kill(-tree.Process.Pid, syscall.SIGKILL)
		tree.Wait()
	})
	t := &procTree{self: os.Getpid(), selfPgid: syscall.Getpgrp(), main: tree.Process.Pid}
	awaitWalk(b, t, 10)
	for _, extra := range []int{0, 2000} {
		if extra > 0 {
			others(b, extra)
		}
		host := len(mustDescendants(b, 1)) + 1
		for _, w := range []struct {
			name string
			walk func(stop func() bool) ([]Proc, bool)
		}{{"children", t.walk}, {"sweep", t.sweep}} {
			b.Run(fmt.Sprintf("extra=%d/%s", extra, w.name), func(b *testing.B) {
				for b.Loop() {
					if procs, ok := w.walk(nil); !ok || len(procs) != 10 {
						b.Fatalf("walk found %d processes (ok %v); want the 10 of the tree", len(procs), ok)
					}
				}
				b.ReportMetric(float64(host), "procs/host")
			})
		}
	}
}

// awaitWalk waits until both walks of t find n processes.
func awaitWalk(b *testing.B, t *procTree, n int) {
	for began := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		fast, _ := t.walk(nil)
		full, _ := t.sweep(nil)
		if len(fast) == n && len(full) == n {
			return
		}
		if time.Since(began) > 10*time.Second {
			b.Fatalf("walk found %d, sweep %d processes; want %d", len(fast), len(full), n)
		}
	}
}

// others starts n sleeping processes outside this process's tree, in a
// session of their own, killed at the benchmark's end.
func others(b *testing.B, n int) {
	sh := exec.Command("/bin/sh", "-c", "i=0; while [ $i -lt "+strconv.Itoa(n)+" ]; do sleep 600 & i=$((i+1)); done")
	sh.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := sh.Run(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { syscall.Kill(-sh.Process.Pid, syscall.SIGKILL) })
	// The sleeps outlive the shell: orphans, outside this process's tree.
	for began := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		left := 0
		for _, p := range mustDescendants(b, 1) {
			if p.Pgid == sh.Process.Pid && !p.Zombie() {
				left++
			}
		}
		if left == n {
			break
		}
		if time.Since(began) > 30*time.Second {
			b.Fatalf("%d of the %d sleeps outside the tree are up", left, n)
		}
	}
	if in := mustDescendants(b, os.Getpid()); len(in) > 10 {
		b.Fatalf("%d processes in this process's tree; want the 10 of the tree (is it a subreaper?)", len(in))
	}
}

// mustDescendants is Descendants of root in /proc.
func mustDescendants(b *testing.B, root int) []Proc {
	procs, err := Descendants("/proc", root)
	if err != nil {
		b.Fatal(err)
	}
	return procs
}
