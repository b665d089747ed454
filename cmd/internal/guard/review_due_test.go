package guard

import (
	"slices"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// Adversarial review of "nothing the guard does holds back the kill"
// (8ae8758): schedules in which the kill could come later than it is due,
// or the report misname why it came.

// TestReviewDueSlowTermGraceEnd: the term ends (tenure's OpEnd, a SIGTERM
// to the guard, or the command exiting with leftovers) with a kill grace
// that ends long before the deadline, and the SIGTERM that ends it reads a
// crowded host's /proc for longer than the grace. The kill comes when the
// grace ends, not when the deadline's kill falls due, and the report does
// not say Expired: the lease was fine, the term had ended.
func TestReviewDueSlowTermGraceEnd(t *testing.T) {
	const grace = 100 * time.Millisecond
	for name, end := range map[string]func(s *state){
		"OpEnd":         func(s *state) { s.handle(Message{Op: OpEnd, Signal: syscall.SIGTERM}) },
		"guard SIGTERM": func(s *state) { s.end(syscall.SIGTERM, s.clock().Add(s.grace)) }, // onSignal, and loop once the command exited
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, rec := newState(t, grace)
				s.handle(leaseMsg(2*time.Second, 0))
				rec.signalTook = 2 * time.Second
				time.Sleep(500 * time.Millisecond)
				end(s)
				s.tick() // as the guard's loop does after each message or signal
				drive(s, 3*time.Second, nil)
				want := []string{"terminated@500ms", "killed@600ms"}
				if !slices.Equal(rec.sent, want) {
					t.Errorf("sent %q; want %q (the kill at the grace's end, 100 ms after the SIGTERM)", rec.sent, want)
				}
				if s.expired {
					t.Errorf("expired = true; want false (the term ended, its grace with it, 1.35 s before the kill's lead)")
				}
			})
		})
	}
}

// TestReviewDueLateWakeAfterGrace: a guard starved of CPU wakes only after
// both the end of the kill grace and the deadline's kill have passed. The
// kill was due at the grace's end, for the term that ended: the report
// does not say the deadline passed (Expired).
func TestReviewDueLateWakeAfterGrace(t *testing.T) {
	for name, wake := range map[string]func(s *state){
		"timer":   func(s *state) { s.tick() },
		"message": func(s *state) { s.handle(Message{Op: OpSignal, Signal: syscall.SIGHUP}) }, // handled before the loop's tick
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, rec := newState(t, 100*time.Millisecond)
				s.handle(leaseMsg(2*time.Second, 0))
				time.Sleep(500 * time.Millisecond)
				s.handle(Message{Op: OpEnd, Signal: syscall.SIGTERM})
				time.Sleep(2 * time.Second) // starved past 600 ms and 1.95 s
				wake(s)
				want := []string{"terminated@500ms", "killed@2.5s"}
				if !slices.Equal(rec.sent, want) {
					t.Fatalf("sent %q; want %q", rec.sent, want)
				}
				if s.expired {
					t.Errorf("expired = true; want false (the kill fell due at 600 ms, the grace's end)")
				}
			})
		})
	}
}

// TestReviewDueRenewWhileFrozenSlowCont: a renewal reaches a frozen tree
// before its new freeze; the SIGCONT that undoes the freeze reads a
// crowded host's /proc. Due is the new lease's, so the SIGCONT is not cut
// short, and nothing else (scout, a freeze) comes until the new freeze.
func TestReviewDueRenewWhileFrozenSlowCont(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, rec := newState(t, time.Minute)
		s.handle(leaseMsg(time.Second, 0))
		rec.signalTook = 500 * time.Millisecond
		drive(s, 3*time.Second, map[time.Duration]Message{
			920 * time.Millisecond: leaseMsg(2*time.Second, 0),
		})
		// The SIGCONT runs its full 500 ms (to 1.42 s), the scout after it.
		want := []string{"stopped (signal)@900ms", "continued@920ms", "stopped (signal)@1.9s", "killed@1.95s"}
		if !slices.Equal(rec.sent, want) {
			t.Fatalf("sent %q; want %q", rec.sent, want)
		}
		if got := rec.scouts; len(got) != 2 || got[1] != 1420*time.Millisecond {
			t.Errorf("scouts at %v; want [0s 1.42s] (after the whole SIGCONT)", got)
		}
		if !s.expired {
			t.Errorf("expired = false; want true (no renewal after the second lease)")
		}
	})
}

// TestReviewDueStoppedEndSlowTerm: a tree stopped by Ctrl-Z whose term
// ends with a short grace, the SIGTERM reading /proc for longer than it:
// the SIGCONT that would let it act on the SIGTERM is cut short, and the
// kill comes at the grace's end, not held back by either.
func TestReviewDueStoppedEndSlowTerm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, rec := newState(t, 100*time.Millisecond)
		s.handle(leaseMsg(2*time.Second, 0))
		time.Sleep(200 * time.Millisecond)
		s.handle(Message{Op: OpStop})
		rec.signalTook = 2 * time.Second
		time.Sleep(300 * time.Millisecond)
		s.handle(Message{Op: OpEnd, Signal: syscall.SIGTERM})
		s.tick() // as the guard's loop does after each message
		drive(s, 3*time.Second, nil)
		want := []string{"stopped (signal)@200ms", "terminated@500ms", "continued@600ms", "killed@600ms"}
		if !slices.Equal(rec.sent, want) {
			t.Fatalf("sent %q; want %q", rec.sent, want)
		}
		if s.expired {
			t.Errorf("expired = true; want false")
		}
	})
}

// TestNoGraceKillsAlone: under --kill-grace 0 the term's end kills at once,
// and the SIGTERM that would come before the kill is not sent: the tree
// gets SIGKILL alone, whatever ended the term.
func TestNoGraceKillsAlone(t *testing.T) {
	for name, end := range map[string]func(s *state){
		"OpEnd":         func(s *state) { s.handle(Message{Op: OpEnd, Signal: syscall.SIGTERM}) },
		"guard SIGTERM": func(s *state) { s.end(syscall.SIGTERM, s.clock().Add(s.grace)) },
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, rec := newState(t, 0)
				s.handle(leaseMsg(2*time.Second, 0))
				time.Sleep(500 * time.Millisecond)
				end(s)
				s.tick()
				drive(s, 3*time.Second, nil)
				if want := []string{"killed@500ms"}; !slices.Equal(rec.sent, want) {
					t.Errorf("sent %q; want %q (SIGKILL alone, at the end)", rec.sent, want)
				}
			})
		})
	}
}
