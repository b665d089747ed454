//go:build linux

package guard_test

import (
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/guard/guardtest"
	"github.com/tenure-dev/tenure/internal/boottime"
)

// TestGuardOwnGroupSignalled: a process of the command's tree that joined
// the guard's own process group (setpgid; the command runs in the guard's
// session), which no group signal of the guard reaches, still gets the
// freeze before the deadline (it writes nothing at or after it) and the
// SIGTERM that ends a term: the guard signals it on its own. (Red before:
// "the writer wrote 6.533ms after the lease's deadline", and "the writer
// never got the SIGTERM that ends the term".)
func TestGuardOwnGroupSignalled(t *testing.T) {
	prog, err := guardtest.Program(t.TempDir(), "heartbeat")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("freeze", func(t *testing.T) {
		hb := startHeartbeat(t, prog, "guardgroup", time.Minute, heartbeatDeadline)
		r, ok := hb.g.report(reportWithin)
		reported := boottime.Now()
		if !ok {
			t.Fatalf("no report within %s of the deadline; alive: %s", reportWithin, describe(hb.held.alive()))
		}
		hb.checkBeats(t, r, reported)
	})
}

// TestGuardTermOwnGroup: a process that joined the guard's process group
// gets the SIGTERM that ends the term (see TestGuardOwnGroupSignalled), not
// just the SIGKILL after the kill grace.
func TestGuardTermOwnGroup(t *testing.T) {
	prog, err := guardtest.Program(t.TempDir(), "heartbeat")
	if err != nil {
		t.Fatal(err)
	}
	testHeartbeatTerm(t, prog, "guardgroup")
}
