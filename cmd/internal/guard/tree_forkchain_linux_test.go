package guard_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/guard"
	"github.com/tenure-dev/tenure/cmd/internal/guard/guardtest"
)

// TestGuardForkChain: a chain of processes each of which forks its
// successor and exits at once is never seen whole by one reading of /proc.
// Whether it runs in a process group whose leader has gone, in the guard's
// own group (which the guard never signals whole), or starts a session of
// its own in every generation, and whether the deadline passes while the
// command runs, the command exits and leaves the chain, or the term ends
// with SIGTERM and a kill grace: the guard must not report the tree gone
// while the chain still forks.
func TestGuardForkChain(t *testing.T) {
	prog, err := guardtest.Program(t.TempDir(), "forkchain")
	if err != nil {
		t.Fatal(err)
	}
	triggers := []struct {
		name, arg string
		do        func(t *testing.T, g *guardProc, gen string)
	}{
		{"deadline", "run", func(t *testing.T, g *guardProc, gen string) { g.lease(t, 200*time.Millisecond) }},
		{"command exits", "exit", func(t *testing.T, g *guardProc, gen string) {}},
		{"SIGTERM", "run", func(t *testing.T, g *guardProc, gen string) {
			g.send(t, guard.Message{Op: guard.OpEnd, Signal: syscall.SIGTERM})
		}},
	}
	// guardgroup: the guard runs under setsid, so its group is its own
	// and the chain's alone.
	for _, group := range []string{"own", "guardgroup", "setsid"} {
		for _, tr := range triggers {
			t.Run(group+"/"+tr.name, func(t *testing.T) {
				testGuardForkChain(t, prog, group, tr.arg, func(g *guardProc, gen string) { tr.do(t, g, gen) })
			})
		}
	}
}

// TestGuardForkChainStop: Ctrl-Z (tenure's OpStop) stops a chain of
// processes each of which forks its successor and exits at once, in a
// process group whose leader has gone, though no reading of /proc sees
// the process to stop: the chain forks no more, then dies at the deadline.
func TestGuardForkChainStop(t *testing.T) {
	prog, err := guardtest.Program(t.TempDir(), "forkchain")
	if err != nil {
		t.Fatal(err)
	}
	testGuardForkChain(t, prog, "own", "run", func(g *guardProc, gen string) {
		g.send(t, guard.Message{Op: guard.OpStop})
		time.Sleep(200 * time.Millisecond) // the guard acts on it
		if before, after := forks(gen); after > before {
			t.Errorf("the chain forked on after Ctrl-Z: generation %d, then %d 500ms later", before, after)
		}
		g.lease(t, 200*time.Millisecond)
	})
}

// forks reads the chain's generation count in gen, and again 500 ms later.
func forks(gen string) (before, after int) {
	before = readInt(gen)
	time.Sleep(500 * time.Millisecond)
	return before, readInt(gen)
}

// testGuardForkChain runs forkchain with arg and group under a guard,
// tells the guard to end the term with do once the chain forks, and checks
// that the chain has stopped forking once the guard reports.
func testGuardForkChain(t *testing.T, prog, group, arg string, do func(g *guardProc, gen string)) {
	out := filepath.Join(t.TempDir(), "out")
	g := startGuard(t, 300*time.Millisecond, []string{"setsid"}, nil, prog, "forkchain", out, arg, group)
	g.lease(t, time.Minute)
	started, ok := g.report(reportWithin)
	if !ok || started.Pid == 0 {
		t.Fatalf("the guard did not start the command: %+v", started)
	}
	pgid := awaitInt(t, out)
	t.Cleanup(func() {
		os.WriteFile(out+".stop", nil, 0o644)
		killGroup(pgid)
	})
	if arg != "exit" { // the chain runs: else the guard may be done already
		awaitGen(t, out+".gen")
	}
	do(g, out+".gen")
	told := time.Now()
	r, ok := g.report(reportWithin)
	if !ok {
		t.Fatalf("no report within %s", reportWithin)
	}
	t.Logf("reported %s after it was told", time.Since(told).Round(time.Millisecond))
	if before, after := forks(out + ".gen"); after > before {
		t.Errorf("the guard reported %+v while the chain (first process group %d) still forked: generation %d, then %d 500ms later", r, pgid, before, after)
	}
}

// awaitGen waits for the chain's generation count in path to advance.
func awaitGen(t *testing.T, path string) {
	t.Helper()
	first := readInt(path)
	for began := time.Now(); time.Since(began) < reportWithin; time.Sleep(10 * time.Millisecond) {
		if readInt(path) > first {
			return
		}
	}
	t.Fatalf("the chain's generation in %s did not advance within %s", path, reportWithin)
}

// killGroup sends SIGKILL to process group pgid until it is gone: a kill
// of a group reaches every member, however fast they fork.
func killGroup(pgid int) {
	for i := 0; i < 1000 && syscall.Kill(-pgid, syscall.SIGKILL) == nil; i++ {
		time.Sleep(time.Millisecond)
	}
}
