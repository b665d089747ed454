//go:build linux

package guard_test

import (
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/guard/guardtest"
	"github.com/tenure-dev/tenure/internal/boottime"
)

// TestGuardFreezeDodged: a process of the command's tree that the freeze
// before the deadline (one SIGSTOP) does not hold goes on writing until
// the SIGKILL lands, which the guard sends its lead (killLead) before the
// deadline, so that the process writes nothing at or after the deadline:
//   - contimer: its own POSIX timer (timer_create, SIGEV_SIGNAL) sends it
//     SIGCONT every millisecond.
//
// With the SIGKILL sent at the deadline (no lead), it wrote 0.8-1.5 ms
// after it.
func TestGuardFreezeDodged(t *testing.T) {
	prog, err := guardtest.Program(t.TempDir(), "heartbeat")
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"contimer"} {
		t.Run(mode, func(t *testing.T) {
			hb := startHeartbeat(t, prog, mode, time.Minute, heartbeatDeadline)
			r, ok := hb.g.report(reportWithin)
			reported := boottime.Now()
			if !ok {
				t.Fatalf("no report within %s of the deadline; alive: %s", reportWithin, describe(hb.held.alive()))
			}
			hb.checkBeats(t, r, reported)
		})
	}
}
