package chaos

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/history"
	"github.com/tenure-dev/tenure/internal/plant"
)

// runPartitioned runs 3 nodes sharing 8 partitions for 15 seconds on
// sched, delayed by 3 seconds (node processes start and members settle
// before they claim), with bug p planted, at the shipped TTL, margin and
// drift. A run whose fault struck no partition owner tested nothing: it is
// run again, up to three times in all (on a loaded machine, members may
// start late or lose their memberships to slow renewals).
func runPartitioned(t *testing.T, p string, sched []Fault) *Report {
	t.Helper()
	sched = slices.Clone(sched)
	for i := range sched {
		sched[i].At += 3 * time.Second
	}
	const attempts = 3
	for i := 1; ; i++ {
		h, err := Run(context.Background(), testOptions(func(o *Options) {
			o.Duration, o.Plant, o.Schedule, o.Partitions = 15*time.Second, p, sched, 8
		}))
		if err != nil {
			t.Fatalf("Run(plant %q, 8 partitions) = %v", p, err)
		}
		rep := Analyze(h)
		if len(rep.NotReowned) > 0 { // liveness on a loaded machine: noted, not asserted
			t.Logf("plant %q: partitions %v not re-owned after the fault healed", p, rep.NotReowned)
		}
		if len(rep.Faults) == len(sched) && rep.Faults[0].Holder != "" && ledAt(rep, rep.Faults[0]) {
			return rep
		}
		if i == attempts {
			t.Fatalf("plant %q: in %d runs, the fault never struck a partition owner: %+v\n%s", p, attempts, rep.Faults, describe(rep))
		}
		t.Logf("plant %q, run %d of %d: the fault struck no partition owner; running again:\n%s", p, i, attempts, describe(rep))
	}
}

// TestPartitionPlantedBugsAreCaught proves the per-partition checkers can
// fail on real processes: each planted bug, moved to the membership that
// every partition of a member shares (plant.WrapGroup), is reported by its
// checker on a schedule that contains the fault exposing it, struck on the
// member that owns the most partitions; the build as shipped reports
// nothing on the same schedule (the control run). Two bugs stand for the
// rest, to keep the suite short: one in the membership's renewal, one in
// its deadline. Both keep a member's partitions working past the
// membership's lease, which the lease-overrun checker reports when a write
// of the struck member is in flight across its lease's end; on a loaded
// machine the member can hand its partitions to late joiners before the
// fault cuts it off, so each bug is given three runs (the controls get
// one, and must report nothing). Whether the next owner's claim also
// overlaps the old term depends on how soon the coordinator expires the
// lease, so overlaps are not asserted.
func TestPartitionPlantedBugsAreCaught(t *testing.T) {
	t.Parallel() // its runs are apart from the other tests' runs
	leaseOverrun := func(string) func(*Report) *history.Check {
		return func(r *Report) *history.Check { return &r.LeaseOverrun }
	}
	testPlants(t, []string{plant.RenewAfterExpiry, plant.NoMargin}, 3, runPartitioned, leaseOverrun)
}

// TestPartitionClockPlantsAreCaught proves the clock family works with
// partitions: a member's clock is the one its membership's lease is
// counted on, so the clock plants carry every partition it owns past the
// membership's lease (each bug is given three runs, as in
// TestPartitionPlantedBugsAreCaught), and the build as shipped, under the
// same clock fault, reports nothing.
func TestPartitionClockPlantsAreCaught(t *testing.T) {
	t.Parallel() // its runs are apart from the other tests' runs
	leaseOverrun := func(string) func(*Report) *history.Check {
		return func(r *Report) *history.Check { return &r.LeaseOverrun }
	}
	testPlants(t, []string{plant.SlowClock, plant.WallClock}, 3, runPartitioned, leaseOverrun)
}
