package proc

import (
	"os/exec"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestKill: Kill crashes the process, also a stopped one, waits until it
// has exited, and empties the slot; Kill of an empty slot does nothing; a
// process started again into the slot is the one the next Kill crashes.
func TestKill(t *testing.T) {
	var s Slot
	s.Kill() // empty: nothing to do
	for _, stop := range []bool{false, true} {
		exited, err := s.Start(exec.Command("sleep", "60"))
		if err != nil {
			t.Fatal(err)
		}
		if stop {
			s.cmd.Process.Signal(syscall.SIGSTOP)
		}
		began := time.Now()
		s.Kill()
		select {
		case <-exited:
		default:
			t.Fatalf("stopped %v: Kill returned before the process exited", stop)
		}
		if s.cmd != nil {
			t.Fatalf("stopped %v: the slot still holds the process after Kill", stop)
		}
		if took := time.Since(began); took > 10*time.Second {
			t.Errorf("stopped %v: Kill took %s", stop, took)
		}
		s.Kill() // emptied: nothing to do
	}
}

// TestStartFailure: a command that cannot start is reported, and leaves
// the slot empty.
func TestStartFailure(t *testing.T) {
	var s Slot
	if _, err := s.Start(exec.Command("/nonexistent/binary")); err == nil {
		t.Fatal("Start of a missing binary succeeded")
	}
	s.Kill()
}
