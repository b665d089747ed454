//go:build linux && openfinding

// Open findings, red on purpose: run them with
//
//	cd cmd && go test -tags openfinding -count=1 -run 'TestGuardForged|TestGuardStoppedByCommand' ./internal/guard/
//
// Each shows a process of the command's tree writing to a file after the
// lease's deadline. TestGuardForged and TestGuardStoppedByCommand need a
// command that may take the guard's channels or stop the guard: as root,
// or as the guard's user while the guard is dumpable (it is not, but for
// the instant after its execve: PR_SET_DUMPABLE 0); the tests run as root.

package guard_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/guard/guardtest"
	"github.com/tenure-dev/tenure/internal/boottime"
)

// TestGuardForged: a process of the command's tree takes ends of the
// guard's channels (pidfd_getfd, open to a process of the same user while
// the guard or tenure is dumpable; the guard's descriptors 3 and 4 being
// close-on-exec does not stop it), and writes on them:
//   - forgelease: renewals of its own, every 50 ms, on every socket of
//     tenure (here, the test), its end of the control channel among them:
//     the guard moves its deadline on and the tree writes past the
//     lease's deadline;
//   - forgereport: a report that the command exited, on the guard's end
//     of the report channel: tenure reads the tree gone while it runs.
func TestGuardForged(t *testing.T) {
	prog, err := guardtest.Program(t.TempDir(), "heartbeat")
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"forgelease", "forgereport"} {
		t.Run(mode, func(t *testing.T) {
			hb := startHeartbeat(t, prog, mode, time.Minute, heartbeatDeadline)
			r, ok := hb.g.report(heartbeatDeadline + 2*time.Second)
			reported := boottime.Now()
			if !ok {
				last := hb.lastBeat()
				if last >= hb.deadline {
					t.Errorf("no report %s after the lease's deadline; the writer wrote %s after it", reported.Sub(hb.deadline).Round(time.Millisecond), last.Sub(hb.deadline).Round(time.Millisecond))
				}
				return
			}
			hb.checkBeats(t, r, reported)
		})
	}
}

// TestGuardStoppedByCommand: a process of the command's tree stops the
// guard, its ancestor and a process of the same user, with SIGSTOP or with
// ptrace (every thread seized and interrupted, which SIGCONT does not
// undo): the guard neither freezes nor kills the tree at the deadline, and
// the process writes on after it. The package doc's "Out of reach" names
// someone stopping the guard; this is the command itself doing it.
func TestGuardStoppedByCommand(t *testing.T) {
	prog, err := guardtest.Program(t.TempDir(), "heartbeat")
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"stopguard", "traceguard"} {
		t.Run(mode, func(t *testing.T) {
			hb := startHeartbeat(t, prog, mode, time.Minute, heartbeatDeadline)
			time.Sleep(heartbeatDeadline + time.Second)
			last := hb.lastBeat()
			if last >= hb.deadline {
				t.Errorf("the writer wrote %s after the lease's deadline, the guard %s by the command's tree",
					last.Sub(hb.deadline).Round(time.Millisecond), map[string]string{"stopguard": "SIGSTOPped", "traceguard": "ptrace-stopped"}[mode])
			}
			// Let the guard go: the writer dies (a tracer that dies lets its
			// tracees run), the guard gets SIGCONT, and kills what is left.
			hb.held.kill()
			_ = syscall.Kill(hb.g.cmd.Process.Pid, syscall.SIGCONT)
			if _, ok := hb.g.report(reportWithin); !ok {
				t.Errorf("no report within %s once the guard was let go", reportWithin)
			}
		})
	}
}
