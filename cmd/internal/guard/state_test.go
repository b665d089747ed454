package guard

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure/internal/boottime"
)

// recorder is the tree of a state under test: it records what was sent,
// and when (as time since the bubble began).
type recorder struct {
	began  time.Time
	sent   []string
	scouts []time.Duration // when the tree was scouted
	// freezeTook is how long a freeze takes (reading /proc) unless due
	// stops it; it checks due every millisecond.
	freezeTook time.Duration
	// scoutTook is how long a scout takes (reading a wide tree), and
	// signalTook how long any other signal takes (reading the host's
	// processes), unless due stops them.
	scoutTook, signalTook time.Duration
}

func (r *recorder) record(sig syscall.Signal) {
	r.sent = append(r.sent, fmt.Sprintf("%s@%s", sig, time.Since(r.began)))
}
func (r *recorder) signal(sig syscall.Signal, due func() bool) {
	r.record(sig)
	r.busy(r.signalTook, due)
}
func (r *recorder) kill() { r.record(syscall.SIGKILL) }
func (r *recorder) freeze(due func() bool) {
	r.record(syscall.SIGSTOP)
	r.busy(r.freezeTook, due)
}
func (r *recorder) scout(due func() bool) {
	r.busy(r.scoutTook, due)
	r.scouts = append(r.scouts, time.Since(r.began))
}

// busy takes d, checking due every millisecond, unless due says the kill
// is due.
func (r *recorder) busy(d time.Duration, due func() bool) {
	for end := time.Now().Add(d); time.Now().Before(end) && !due(); {
		time.Sleep(time.Millisecond)
	}
}

// never is a due that never says the kill is due.
func never() bool { return false }

// newState returns a state whose boot clock is the bubble's clock
// (0 when the bubble began), with a lease file in dir.
func newState(t *testing.T, grace time.Duration) (*state, *recorder) {
	began := time.Now()
	rec := &recorder{began: began}
	clock := func() boottime.Instant { return boottime.Instant(time.Since(began)) }
	return &state{clock: clock, grace: grace, tree: rec, path: filepath.Join(t.TempDir(), "lease.json")}, rec
}

func at(d time.Duration) boottime.Instant { return boottime.Instant(d) }

func leaseMsg(deadline, termAt time.Duration) Message {
	m := Message{Op: OpLease, Lease: &Lease{Key: "k", Holder: "h", Token: 7, Deadline: at(deadline), TTLMs: 2000, Live: true}}
	if termAt != 0 {
		m.TermAt = at(termAt)
	}
	return m
}

// drive runs the guard's loop on s for d (as the guard does: sleep until
// wake, then tick), applying msgs at their times.
func drive(s *state, d time.Duration, msgs map[time.Duration]Message) {
	began := time.Now()
	times := make([]time.Duration, 0, len(msgs))
	for at := range msgs {
		times = append(times, at)
	}
	slices.Sort(times)
	for time.Since(began) < d {
		next := s.wake(poll)
		if len(times) > 0 {
			next = min(next, times[0]-time.Since(began))
		}
		time.Sleep(max(next, time.Millisecond))
		for len(times) > 0 && time.Since(began) >= times[0] {
			s.handle(msgs[times[0]])
			times = times[1:]
		}
		s.tick()
	}
}

// TestDeadlines: SIGTERM at TermAt, SIGSTOP (frozen) a twentieth of the TTL
// before the last deadline heard of, SIGKILL a fortieth of the TTL (50 ms
// at most: killLead) before it; a renewal moves them all; nothing is sent
// while the lease is renewed.
func TestDeadlines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, rec := newState(t, time.Second)
		s.handle(leaseMsg(time.Second, 700*time.Millisecond))
		drive(s, 3*time.Second, map[time.Duration]Message{
			500 * time.Millisecond: leaseMsg(1500*time.Millisecond, 1200*time.Millisecond),
		})
		want := []string{"terminated@1.2s", "stopped (signal)@1.4s", "killed@1.45s"}
		if !slices.Equal(rec.sent, want) {
			t.Fatalf("sent %q; want %q (TERM and KILL moved by the renewal)", rec.sent, want)
		}
		if !s.overdue {
			t.Errorf("overdue = false after the SIGTERM at TermAt; want true (Report.Overdue)")
		}
		l, err := ReadLease(s.path)
		if err != nil {
			t.Fatal(err)
		}
		if l.Live || !errors.Is(l.Check(s.clock()), ErrEnded) {
			t.Errorf("lease file after the kill: %+v; want live false (ErrEnded)", l)
		}
	})
}

// TestScout: the tree is scouted on each lease that comes before its
// freeze is due, and never while one is.
func TestScout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, rec := newState(t, time.Second)
		s.handle(leaseMsg(1050*time.Millisecond, 0))
		drive(s, 3*time.Second, map[time.Duration]Message{
			800 * time.Millisecond:  leaseMsg(1550*time.Millisecond, 0),
			1470 * time.Millisecond: leaseMsg(1550*time.Millisecond, 0), // the freeze is due since 1.45s
		})
		want := []time.Duration{0, 800 * time.Millisecond}
		if !slices.Equal(rec.scouts, want) {
			t.Errorf("scouted at %v; want %v (each lease but the one that came once its freeze was due)", rec.scouts, want)
		}
		if want := []string{"stopped (signal)@1.45s", "killed@1.5s"}; !slices.Equal(rec.sent, want) {
			t.Errorf("sent %q; want %q", rec.sent, want)
		}
	})
}

// TestEnd: a term that ends gets the signal now and SIGKILL after the
// grace, or at the kill's lead before the deadline if that comes first.
func TestEnd(t *testing.T) {
	for _, tc := range []struct {
		name     string
		grace    time.Duration
		deadline time.Duration
		want     []string
	}{
		{"grace first", 300 * time.Millisecond, 5 * time.Second, []string{"terminated@1s", "killed@1.3s"}},
		{"deadline first", 10 * time.Second, 1500 * time.Millisecond, []string{"terminated@1s", "stopped (signal)@1.4s", "killed@1.45s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, rec := newState(t, tc.grace)
				s.handle(leaseMsg(tc.deadline, 0))
				drive(s, 6*time.Second, map[time.Duration]Message{
					time.Second: {Op: OpEnd, Signal: syscall.SIGTERM},
				})
				if !slices.Equal(rec.sent, tc.want) {
					t.Fatalf("sent %q; want %q", rec.sent, tc.want)
				}
				if s.overdue {
					t.Errorf("overdue = true after an OpEnd's SIGTERM; want false (not an overdue renewal)")
				}
			})
		})
	}
}

// TestEndRepeated: SIGTERM after SIGTERM to the guard (a process of the
// tree, or a supervisor, sending it again and again) ends the term once:
// the tree gets one SIGTERM, and the freeze and SIGKILL come on time.
func TestEndRepeated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, rec := newState(t, 10*time.Second)
		s.handle(leaseMsg(2*time.Second, 0))
		msgs := map[time.Duration]Message{}
		for at := time.Second; at < 3*time.Second; at += 50 * time.Millisecond {
			msgs[at] = Message{Op: OpEnd, Signal: syscall.SIGTERM}
		}
		drive(s, 4*time.Second, msgs)
		want := []string{"terminated@1s", "stopped (signal)@1.9s", "killed@1.95s"}
		if !slices.Equal(rec.sent, want) {
			t.Fatalf("sent %q; want %q", rec.sent, want)
		}
	})
}

// TestEndAfterOverdueTerm: a term that ends after the guard sent SIGTERM
// for an overdue renewal, with no renewal since, sends no second SIGTERM
// (many commands take a second one as "exit now, skip the clean-up"), and
// SIGKILL comes before the deadline; one renewed since gets SIGTERM again. A
// tree stopped by Ctrl-Z is still continued, to act on the first.
func TestEndAfterOverdueTerm(t *testing.T) {
	for _, tc := range []struct {
		name string
		msgs map[time.Duration]Message
		want []string
	}{
		{"not renewed", map[time.Duration]Message{
			1500 * time.Millisecond: {Op: OpEnd, Signal: syscall.SIGTERM},
		}, []string{"terminated@1s", "stopped (signal)@1.9s", "killed@1.95s"}},
		{"stopped by Ctrl-Z", map[time.Duration]Message{
			1200 * time.Millisecond: {Op: OpStop},
			1500 * time.Millisecond: {Op: OpEnd, Signal: syscall.SIGTERM},
		}, []string{"terminated@1s", "stopped (signal)@1.2s", "continued@1.5s", "stopped (signal)@1.9s", "killed@1.95s"}},
		{"renewed since", map[time.Duration]Message{
			1200 * time.Millisecond: leaseMsg(4*time.Second, 3*time.Second),
			1500 * time.Millisecond: {Op: OpEnd, Signal: syscall.SIGTERM},
		}, []string{"terminated@1s", "terminated@1.5s", "killed@2.5s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, rec := newState(t, time.Second)
				s.handle(leaseMsg(2*time.Second, time.Second))
				drive(s, 5*time.Second, tc.msgs)
				if !slices.Equal(rec.sent, tc.want) {
					t.Fatalf("sent %q; want %q", rec.sent, tc.want)
				}
			})
		})
	}
}

// TestStopContinue: a tree stopped by Ctrl-Z is continued only before its
// deadline; after it, it is killed (the kill's lead before the deadline,
// while stopped) and never continued.
func TestStopContinue(t *testing.T) {
	for _, tc := range []struct {
		name string
		cont time.Duration
		want []string
	}{
		{"before the deadline", 800 * time.Millisecond, []string{"stopped (signal)@500ms", "continued@800ms", "stopped (signal)@1.9s", "killed@1.95s"}},
		{"after the deadline", 3 * time.Second, []string{"stopped (signal)@500ms", "stopped (signal)@1.9s", "killed@1.95s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, rec := newState(t, time.Second)
				s.handle(leaseMsg(2*time.Second, 0))
				drive(s, 4*time.Second, map[time.Duration]Message{
					500 * time.Millisecond: {Op: OpStop},
					tc.cont:                {Op: OpCont},
				})
				if !slices.Equal(rec.sent, tc.want) {
					t.Fatalf("sent %q; want %q", rec.sent, tc.want)
				}
				if s.overdue {
					t.Errorf("overdue = true after an OpEnd's SIGTERM; want false (not an overdue renewal)")
				}
			})
		})
	}
}

// TestLeaseFile: the lease file says held exactly until the deadline, on
// the boot clock.
func TestLeaseFile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, _ := newState(t, time.Second)
		s.handle(leaseMsg(time.Second, 0))
		l, err := ReadLease(s.path)
		if err != nil {
			t.Fatal(err)
		}
		if l.Token != 7 || l.Key != "k" || l.Check(at(999*time.Millisecond)) != nil {
			t.Fatalf("lease %+v at 999ms: %v; want token 7 of k, held", l, l.Check(at(999*time.Millisecond)))
		}
		if err := l.Check(at(time.Second)); !errors.Is(err, ErrExpired) {
			t.Errorf("Check at the deadline = %v; want ErrExpired", err)
		}
		if _, err := ReadLease(filepath.Join(t.TempDir(), "none")); err == nil {
			t.Error("ReadLease of a missing file: nil error")
		}
	})
}

// TestContinueAfterSuspend: SIGCONT that reaches the guard after the
// deadline, before the guard looked at its clock (the host was suspended),
// kills the tree without continuing it.
func TestContinueAfterSuspend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, rec := newState(t, time.Second)
		s.handle(leaseMsg(2*time.Second, 0))
		s.handle(Message{Op: OpStop})
		time.Sleep(5 * time.Second) // no tick: the guard did not run
		s.handle(Message{Op: OpCont})
		want := []string{"stopped (signal)@0s", "killed@5s"}
		if !slices.Equal(rec.sent, want) {
			t.Fatalf("sent %q; want %q", rec.sent, want)
		}
	})
}

// TestFreezeThenRenew: a renewal that comes after the tree was frozen
// ahead of the deadline, before its kill is due, continues it.
func TestFreezeThenRenew(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, rec := newState(t, time.Second)
		s.handle(leaseMsg(time.Second, 0))
		drive(s, 3*time.Second, map[time.Duration]Message{
			925 * time.Millisecond: leaseMsg(2*time.Second, 0),
		})
		want := []string{"stopped (signal)@900ms", "continued@925ms", "stopped (signal)@1.9s", "killed@1.95s"}
		if !slices.Equal(rec.sent, want) {
			t.Fatalf("sent %q; want %q", rec.sent, want)
		}
	})
}

// TestOverdueEnd: a tree that ends after the SIGTERM for an overdue
// renewal ended because of it (Report.Overdue) when no renewal came since,
// or when it ended within the kill grace of that SIGTERM; a tree that
// survived it, was renewed and ended later on its own did not.
func TestOverdueEnd(t *testing.T) {
	for _, tc := range []struct {
		name  string
		renew bool
		end   time.Duration
		want  bool
	}{
		{"no renewal since", false, 900 * time.Millisecond, true},
		{"renewed, ended within the grace", true, 1500 * time.Millisecond, true},
		{"renewed, ended after the grace", true, 2500 * time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, rec := newState(t, time.Second)
				s.handle(leaseMsg(time.Second, 700*time.Millisecond))
				msgs := map[time.Duration]Message{}
				if tc.renew {
					msgs[800*time.Millisecond] = leaseMsg(5*time.Second, 4*time.Second)
				}
				drive(s, tc.end, msgs)
				if got := s.overdueEnd(); got != tc.want {
					t.Errorf("overdueEnd() at %s = %v; want %v (sent %q)", tc.end, got, tc.want, rec.sent)
				}
			})
		})
	}
}

// TestWideTreeFrozenEarly: a tree whose scout took long is frozen early
// enough that a freeze as long (twice the scout) ends before the kill
// falls due, but never more than a tenth of the TTL (200 ms here) before
// the deadline; a tree scouted quickly is frozen at the usual lead.
func TestWideTreeFrozenEarly(t *testing.T) {
	for _, tc := range []struct {
		scout  time.Duration
		freeze string
	}{
		{10 * time.Millisecond, "900ms"}, // 50 + 2×10 = 70 ms: under the freeze's lead, 100 ms
		{60 * time.Millisecond, "830ms"}, // 50 + 2×60 = 170 ms
		{time.Second / 2, "800ms"},       // a tenth of the TTL at most
	} {
		t.Run(tc.scout.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, rec := newState(t, time.Second)
				rec.scoutTook = tc.scout
				s.handle(leaseMsg(time.Second, 0))
				drive(s, 2*time.Second, nil)
				if want := []string{"stopped (signal)@" + tc.freeze, "killed@950ms"}; !slices.Equal(rec.sent, want) {
					t.Errorf("sent %q; want %q", rec.sent, want)
				}
			})
		})
	}
}

// TestSlowFreeze: a freeze that reads /proc for longer than its lead over
// the kill (80 ms here: 900 ms to 980 ms, the kill due at 950 ms) stops
// when the kill falls due, and the kill comes then, not once the reading
// ends.
func TestSlowFreeze(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, rec := newState(t, time.Second)
		rec.freezeTook = 80 * time.Millisecond
		s.handle(leaseMsg(time.Second, 0))
		drive(s, 2*time.Second, nil)
		if want := []string{"stopped (signal)@900ms", "killed@950ms"}; !slices.Equal(rec.sent, want) {
			t.Errorf("sent %q; want %q", rec.sent, want)
		}
	})
}

// TestSlowSignalHoldsNoKill: whatever the guard is doing to the tree when
// the kill falls due (a forwarded signal, the SIGTERM that ends the term,
// Ctrl-Z, each reading every process of a crowded host; a scout of a wide
// tree on a late renewal), it stops, and the kill comes when due, not
// once the reading ends. Each step here takes 2 s unless due stops it; the
// kill is due at 950 ms (the lease's deadline, 1 s, less its lead).
func TestSlowSignalHoldsNoKill(t *testing.T) {
	for name, tc := range map[string]struct {
		at   time.Duration
		msg  Message
		want []string
	}{
		"forwarded": {920 * time.Millisecond, Message{Op: OpSignal, Signal: syscall.SIGHUP},
			[]string{"stopped (signal)@900ms", "hangup@920ms", "killed@950ms"}},
		"end": {920 * time.Millisecond, Message{Op: OpEnd, Signal: syscall.SIGTERM},
			[]string{"stopped (signal)@900ms", "terminated@920ms", "killed@950ms"}},
		"stop": {920 * time.Millisecond, Message{Op: OpStop},
			[]string{"stopped (signal)@900ms", "stopped (signal)@920ms", "killed@950ms"}},
		// The same deadline, renewed late: the scout runs into the freeze
		// and the kill.
		"renewal": {850 * time.Millisecond, leaseMsg(time.Second, 0), []string{"killed@950ms"}},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, rec := newState(t, time.Minute)
				s.handle(leaseMsg(time.Second, 0))
				rec.signalTook, rec.scoutTook = 2*time.Second, 2*time.Second
				drive(s, 3*time.Second, map[time.Duration]Message{tc.at: tc.msg})
				if !slices.Equal(rec.sent, tc.want) {
					t.Errorf("sent %q; want %q", rec.sent, tc.want)
				}
			})
		})
	}
}
