package tenure_test

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure/internal/timing"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/memory"
)

// Adversarial clock tests: a host suspend around a renewal, the
// coordinator's clock running at and beyond the drift bound, and jumps of
// the coordinator's clock within and beyond the allowance, every act of
// every leader checked by a leaseOracle.

// TestSuspendAroundRenewal: a's first renewal (sent 1s into its
// term) is slowed by 200ms, and a's host is suspended 1.1s in, while the
// renewal's request or reply is on the link. The coordinator is on another
// host: its clock runs on through the suspend (JumpClock). A suspend longer
// than what is left of the lease ends the term at once, whatever the late
// reply says; a short one only shortens the renewed term, which goes on.
func TestSuspendAroundRenewal(t *testing.T) {
	for _, tc := range []struct {
		name           string
		request, reply time.Duration
		suspend        time.Duration
		survives       bool
	}{
		{"2s during the request", 200 * time.Millisecond, 0, 2 * time.Second, false},
		{"2s during the reply", 0, 200 * time.Millisecond, 2 * time.Second, false},
		{"100ms during the request", 200 * time.Millisecond, 0, 100 * time.Millisecond, true},
		{"100ms during the reply", 0, 200 * time.Millisecond, 100 * time.Millisecond, true},
		{"40ms during the reply", 0, 200 * time.Millisecond, 40 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				suspend, restore := tenure.SimulateSuspend()
				defer restore()
				c := memory.New()
				defer c.Close()
				o := newOracle(c, "scheduler")
				type result struct {
					resumed time.Time
					live3s  bool
				}
				res := make(chan result, 1)
				var once sync.Once
				during := func(term *tenure.Term) {
					once.Do(func() {
						c.SetLatency("a", tc.request, tc.reply)
						time.Sleep(1100 * time.Millisecond)
						suspend(tc.suspend)
						c.JumpClock(tc.suspend) // the coordinator's host was not suspended
						r := result{resumed: time.Now()}
						time.Sleep(300 * time.Millisecond)
						c.HealAll()
						time.Sleep(2700 * time.Millisecond)
						r.live3s = term.Check() == nil
						res <- r
					})
				}
				stopA := runLoop(t, newElector(t, c, testConfig("a")), o.lead("a", 0, during), 0)
				time.Sleep(100 * time.Millisecond)
				stopB := runLoop(t, newElector(t, c, testConfig("b")), o.lead("b", 6*time.Second, nil), 0)
				r := await(t, res, 30*time.Second, "the first term's result")
				stopA()
				stopB()
				o.check(t)
				a := o.termsOf("a")
				switch {
				case tc.survives && !r.live3s:
					t.Fatalf("a's term ended within 3s of a %s suspend; want it renewed and live; terms:\n%s", tc.suspend, o.describe())
				case !tc.survives && r.live3s:
					t.Fatalf("a's term live 3s after a %s suspend; want it over; terms:\n%s", tc.suspend, o.describe())
				case !tc.survives && a[0].end.After(r.resumed):
					t.Fatalf("a's first term acted %s after resuming from a %s suspend past its deadline; want not at all", a[0].end.Sub(r.resumed), tc.suspend)
				}
			})
		})
	}
}

// shortSuspendNearDeadline runs a (cut off 1.5s into its term, so that its
// deadline stays where its renewal at 1s put it, 1s + SafeLease) and b
// campaigning; 20ms before a's deadline a's host is suspended for suspend,
// while the coordinator's clock runs on. It returns the oracle.
func shortSuspendNearDeadline(t *testing.T, margin, suspend time.Duration) *leaseOracle {
	suspendHost, restore := tenure.SimulateSuspend()
	defer restore()
	c := memory.New()
	defer c.Close()
	o := newOracle(c, "scheduler")
	cfg := func(h string) tenure.Config {
		cfg := testConfig(h)
		cfg.Margin, cfg.MaxDrift = margin, 0
		return cfg
	}
	var once sync.Once
	during := func(term *tenure.Term) {
		once.Do(func() {
			time.Sleep(1500 * time.Millisecond)
			c.Block("a")
			time.Sleep(time.Until(term.Deadline()) - 20*time.Millisecond)
			suspendHost(suspend)
			c.JumpClock(suspend) // the coordinator's host was not suspended
		})
	}
	stopA := runLoop(t, newElector(t, c, cfg("a")), o.lead("a", 0, during), 0)
	time.Sleep(100 * time.Millisecond)
	stopB := runLoop(t, newElector(t, c, cfg("b")), o.lead("b", 0, nil), 0)
	time.Sleep(8 * time.Second)
	c.HealAll()
	stopA()
	stopB()
	if len(o.termsOf("b")) == 0 {
		t.Fatalf("b never led; terms:\n%s", o.describe())
	}
	return o
}

// TestShortSuspendNearDeadline: a host suspend of tens of
// milliseconds just before the deadline, the coordinator's clock running
// on. A suspend longer than the 50ms the term takes for scheduling noise
// ends the term at once; a shorter one is covered by the margin, which
// Config.Validate requires to be at least as long (MinMargin; see
// TestShortSuspendSmallMargin).
func TestShortSuspendNearDeadline(t *testing.T) {
	for _, tc := range []struct {
		name            string
		margin, suspend time.Duration
	}{
		{"60ms suspend, 50ms margin", timing.MinMargin, 60 * time.Millisecond},
		{"40ms suspend, 50ms margin", 50 * time.Millisecond, 40 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				shortSuspendNearDeadline(t, tc.margin, tc.suspend).check(t)
			})
		})
	}
}
