package guard_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/guard"
	"github.com/tenure-dev/tenure/cmd/internal/guard/guardtest"
)

// TestGuardEscapes: a process of the command's tree that tries to leave
// the tree (its subreaper ancestor dies; a thread forks after its leader
// ended with pthread_exit; a new PID namespace; another user; a sibling
// made by clone(CLONE_PARENT); a vfork child that never execs; a process
// named to look like a zombie child of init in its stat line; a subreaper
// that lives on and reaps what it inherits) is killed at the deadline, and
// the guard reports the tree gone only once it is. (Needs root: unshare,
// setuid.)
func TestGuardEscapes(t *testing.T) {
	prog, err := guardtest.Program(t.TempDir(), "escapes")
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"subreaper", "threadfork", "newpid", "nobody", "cloneparent", "vfork", "comm", "keepreaper"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "out")
			g := startGuard(t, time.Minute, nil, nil, prog, "escapes", mode, out)
			g.lease(t, time.Minute)
			started, ok := g.report(reportWithin)
			if !ok || started.Pid == 0 {
				t.Fatalf("the guard did not start the command: %+v", started)
			}
			held := pidfds{}
			t.Cleanup(held.kill)
			held.hold(t, []guard.Proc{{Pid: started.Pid}})
			key := awaitInt(t, out)
			held.hold(t, []guard.Proc{{Pid: key}})
			procs, err := guard.Descendants("/proc", g.cmd.Process.Pid)
			if err != nil {
				t.Fatal(err)
			}
			held.hold(t, procs)
			g.lease(t, 200*time.Millisecond)
			r, ok := g.report(reportWithin)
			left := held.alive()
			if !ok {
				t.Fatalf("no report within %s; alive: %s", reportWithin, describe(left))
			}
			if len(left) > 0 {
				t.Errorf("the guard reported %+v while %s of the tree lived (process %d made by %s)", r, describe(left), key, mode)
			}
			if !r.Killed || !r.Expired {
				t.Errorf("report %+v; want killed, expired", r)
			}
		})
	}
}
