package guard

import (
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// Adversarial review of the kill's lead (killLead, KillAt): whatever comes
// between the kill being due (950 ms for a lease whose deadline is 1 s and
// TTL 2 s) and the deadline, the tree is killed at the kill's instant and
// never continued after it.

// TestReviewRenewInKillLead: a renewal that comes after the kill was due
// (960 ms), the guard on time, neither continues nor spares the tree.
func TestReviewRenewInKillLead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, rec := newState(t, time.Second)
		s.handle(leaseMsg(time.Second, 0))
		drive(s, 2*time.Second, map[time.Duration]Message{
			960 * time.Millisecond: leaseMsg(3*time.Second, 0),
		})
		want := []string{"stopped (signal)@900ms", "killed@950ms"}
		if !slices.Equal(rec.sent, want) {
			t.Fatalf("sent %q; want %q (a renewal after the kill is too late)", rec.sent, want)
		}
	})
}

// TestReviewLateHandOff: Ctrl-Z's continue (OpCont), a forwarded SIGCONT
// (OpSignal) or the first lease handled after the kill was due but before
// the deadline, with no tick since the lease (the guard woke for the
// message first): the tree is killed then and never continued, and a
// command not yet started never starts.
func TestReviewLateHandOff(t *testing.T) {
	for _, tc := range []struct {
		name string
		msgs []Message // at 0, then at 970 ms
		want []string
	}{
		{"OpCont", []Message{{Op: OpStop}, {Op: OpCont}}, []string{"stopped (signal)@0s", "killed@970ms"}},
		{"OpSignal SIGCONT", nil, []string{"killed@970ms"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, rec := newState(t, time.Second)
				s.handle(leaseMsg(time.Second, 0))
				if tc.msgs != nil {
					s.handle(tc.msgs[0])
				}
				time.Sleep(970 * time.Millisecond) // no tick: the guard did not run
				if tc.msgs != nil {
					s.handle(tc.msgs[1])
				} else {
					s.handle(Message{Op: OpSignal, Signal: syscall.SIGCONT})
				}
				s.tick()
				if !slices.Equal(rec.sent, tc.want) {
					t.Fatalf("sent %q; want %q", rec.sent, tc.want)
				}
			})
		})
	}
}

// TestReviewStartInKillLead: a first lease whose kill is already due when
// the command could start (970 ms of a deadline at 1 s) keeps it from
// starting, and says why.
func TestReviewStartInKillLead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, _ := newState(t, time.Second)
		time.Sleep(970 * time.Millisecond)
		s.handle(leaseMsg(time.Second, 0))
		why := s.tooLate()
		if !strings.Contains(why, "30ms away") {
			t.Fatalf("tooLate() = %q; want the deadline 30ms away, within the kill's lead", why)
		}
	})
}

// TestReviewGraceInKillLead: a term ended (OpEnd) with a kill grace that
// runs out between the kill's instant and the deadline (at 980 ms) is
// killed at the kill's instant, not when the grace runs out.
func TestReviewGraceInKillLead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, rec := newState(t, 480*time.Millisecond)
		s.handle(leaseMsg(time.Second, 0))
		drive(s, 2*time.Second, map[time.Duration]Message{
			500 * time.Millisecond: {Op: OpEnd, Signal: syscall.SIGTERM},
		})
		want := []string{"terminated@500ms", "stopped (signal)@900ms", "killed@950ms"}
		if !slices.Equal(rec.sent, want) {
			t.Fatalf("sent %q; want %q", rec.sent, want)
		}
	})
}

// TestReviewRenewAfterKillDue: lease deadline 1 s (TTL 2 s: frozen at
// 900 ms, kill due at 950 ms), a renewal handled at 960 ms with no tick
// since the freeze (the guard woke for the message before its timer):
// too late, as it is when the tick comes first. (Taken, it continued the
// frozen tree, until handle checked the kill's time first.)
func TestReviewRenewAfterKillDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, rec := newState(t, time.Second)
		s.handle(leaseMsg(time.Second, 0))
		time.Sleep(900 * time.Millisecond)
		s.tick()
		time.Sleep(60 * time.Millisecond) // no tick: the message came first
		s.handle(leaseMsg(3*time.Second, 0))
		s.tick()
		want := []string{"stopped (signal)@900ms", "killed@960ms"}
		if !slices.Equal(rec.sent, want) {
			t.Fatalf("sent %q; want %q (a renewal after the kill was due is too late)", rec.sent, want)
		}
	})
}
