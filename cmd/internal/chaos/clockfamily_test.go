package chaos

import (
	"context"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/history"
)

// A run of drawn clock faults within the bound (--max-drift 1%) at the
// shipped TTL and margin is clean, and the faults reached the nodes: each
// struck node reported its clock set, and the leases its elector counted
// while its clock was off were counted at the fault's rate.
func TestClockFaultsWithinTheBoundAreClean(t *testing.T) {
	t.Parallel() // a run of processes of its own
	h, err := Run(context.Background(), testOptions(func(o *Options) {
		o.Seed, o.Duration, o.Families = 2, 20*time.Second, []string{FamilyClock}
	}))
	if err != nil {
		t.Fatal(err)
	}
	rep := Analyze(h)
	if !rep.OK() || !rep.Conclusive() {
		t.Fatalf("clock faults within the bound: %s\n%s", rep.Verdict(), describe(rep))
	}
	if len(rep.Faults) == 0 {
		t.Fatalf("no clock fault struck:\n%s", describe(rep))
	}
	for _, f := range rep.Faults {
		set, counted := false, false
		for _, ev := range h.Events {
			if ev.Holder != f.Holder || ev.At < f.Start || ev.At > f.End {
				continue
			}
			set = set || (ev.Kind == history.KindClock && ev.Rate == f.Rate && ev.Wall == f.Jump)
			counted = counted || ((ev.Kind == history.KindRenew || ev.Kind == history.KindAcquire) && ev.OK && ev.Rate == f.Rate)
		}
		if !set {
			t.Errorf("fault %s: %s never reported its clock at %v× with its wall clock %s ahead", f.Fault, f.Holder, f.Rate, f.Jump)
		}
		if !counted && ledAt(rep, f) {
			t.Errorf("fault %s: leader %s counted no lease at %v×", f.Fault, f.Holder, f.Rate)
		}
	}
}
