package guard_test

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/guard/guardtest"
)

// TestGuardForkChain: a chain of processes each of which forks its
// successor and exits at once, in a process group whose leader has gone,
// is never seen whole by one reading of /proc. Whether the deadline passes
// while the command runs or the command exits and leaves the chain, the
// guard must not report the tree gone while the chain still forks.
func TestGuardForkChain(t *testing.T) {
	prog, err := guardtest.Program(t.TempDir(), "forkchain")
	if err != nil {
		t.Fatal(err)
	}
	deadline := func(t *testing.T, g *guardProc) { g.lease(t, 200*time.Millisecond) }
	for _, tc := range []struct {
		name, arg, group string
		do               func(t *testing.T, g *guardProc)
	}{
		{"deadline", "run", "own", deadline},
		{"command exits", "exit", "own", func(t *testing.T, g *guardProc) {}},
		// In the guard's group, which the guard never signals whole: the
		// guard runs under setsid, so that group is the guard's alone.
		{"deadline, guard's group", "run", "guardgroup", deadline},
		{"command exits, guard's group", "exit", "guardgroup", func(t *testing.T, g *guardProc) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			g := startGuard(t, 300*time.Millisecond, []string{"setsid"}, nil, prog, "forkchain", out, tc.arg, tc.group)
			g.lease(t, time.Minute)
			started, ok := g.report(reportWithin)
			if !ok || started.Pid == 0 {
				t.Fatalf("the guard did not start the command: %+v", started)
			}
			pgid := awaitInt(t, out)
			t.Cleanup(func() { killGroup(pgid) })
			if tc.arg != "exit" { // the chain runs: else the guard may be done already
				awaitGen(t, out+".gen")
			}
			tc.do(t, g)
			r, ok := g.report(reportWithin)
			if !ok {
				t.Fatalf("no report within %s", reportWithin)
			}
			before := readInt(out + ".gen")
			time.Sleep(500 * time.Millisecond)
			after := readInt(out + ".gen")
			if after > before {
				t.Errorf("the guard reported %+v while the chain (process group %d) still forked: generation %d, then %d 500ms later", r, pgid, before, after)
			}
		})
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
