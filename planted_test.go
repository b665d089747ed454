package tenure_test

import (
	"flag"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/plant"
)

// Planted bugs prove the chaos checkers can fail. Each wraps the memory
// coordinator (package internal/plant, the same wrappers tenure verify
// plants) so that the elector behaves as a buggy one would: a deadline
// measured from the reply, no safety margin, a renewal allowed after expiry.

// plantedCase is a planted bug and a schedule containing the fault that
// exposes it.
type plantedCase struct {
	name  string
	bug   string
	sched []faultEvent
}

func plantedCases() []plantedCase {
	return []plantedCase{
		// Replies 800ms late (more than the 300ms margin, less than the
		// 1s request timeout, so renewals succeed), then the leader's
		// requests are lost: its last renewal's reply still arrives, 800ms
		// after the lease was extended, and the bug counts those 800ms into
		// the lease. (A partition would also lose the reply of a renewal in
		// flight, 800ms of every 1.8s: the leader would then count from an
		// earlier renewal, and the bug would stay hidden in 4 runs of 10.)
		{"deadline from reply", plant.ReplyDeadline, []faultEvent{
			{at: 5 * time.Second, fam: famLatency, node: leaderNode, dur: 12 * time.Second, reply: 800 * time.Millisecond},
			{at: 10 * time.Second, fam: famBlock, node: leaderNode, dur: 2 * chaosTTL},
		}},
		// The coordinator's clock runs fast, as fast as MaxDrift allows,
		// and the leader is cut off: its lease expires at the coordinator
		// before TTL has passed on the leader's clock.
		{"no margin", plant.NoMargin, []faultEvent{
			{at: time.Second, fam: famDrift, rate: 1 / (1 - chaosDrift)},
			{at: 5 * time.Second, fam: famPartition, node: leaderNode, dur: 2 * chaosTTL},
		}},
		// The leader is cut off for two TTLs: its renewals fail, and the
		// bug reports them renewed.
		{"renewal after expiry", plant.RenewAfterExpiry, []faultEvent{
			{at: 5 * time.Second, fam: famPartition, node: leaderNode, dur: 2 * chaosTTL},
		}},
	}
}

// runPlanted runs c's schedule for 30 simulated seconds with bug planted
// ("" plants nothing), in a bubble.
func runPlanted(t *testing.T, c plantedCase, bug string) chaosResult {
	var res chaosResult
	synctest.Test(t, func(t *testing.T) {
		o := chaosOptions{nodes: 3, length: 30 * time.Second, schedule: c.sched, margin: -1}
		if bug != "" {
			o.wrap = func(co tenure.Coordinator, cfg tenure.Config) tenure.Coordinator { return plant.Wrap(co, bug, cfg) }
		}
		res = runChaos(t, o)
	})
	return res
}

// TestChaosCatchesPlantedBugs: each planted bug is reported as an overlap on
// a schedule that contains the fault exposing it, and the build as shipped
// reports nothing on the same schedule (the control run). The fenced
// register accepts no stale write either way.
func TestChaosCatchesPlantedBugs(t *testing.T) {
	for _, c := range plantedCases() {
		t.Run(c.name, func(t *testing.T) {
			res := runPlanted(t, c, c.bug)
			if res.overlap.Count == 0 {
				t.Errorf("planted bug %q: no overlap reported:\n%s", c.name, res.describe(0))
			}
			if res.stale.Count > 0 || res.order.Count > 0 {
				t.Errorf("planted bug %q: the fenced register failed too:\n%s", c.name, res.describe(0))
			}
			if ctl := runPlanted(t, c, ""); ctl.violations() > 0 || ctl.accepted == 0 {
				t.Errorf("control run (no bug) on the schedule that exposes %q: %d violations, %d writes accepted; want none and some:\n%s",
					c.name, ctl.violations(), ctl.accepted, ctl.describe(0))
			}
		})
	}
}

var plantRuns = flag.Int("chaos.plantruns", 20, "drawn schedules per planted bug in TestChaosPlantCatchRate")

// TestChaosPlantCatchRate prints (with -v) how often each planted bug is
// reported on drawn schedules of every fault family at the shipped margin
// and drift bound (seeds 1…20, 240 simulated seconds each). The rate is a
// measurement, not asserted; what is asserted is that every run made
// progress and that the fenced register, which fences planted bugs too,
// accepted no stale write.
func TestChaosPlantCatchRate(t *testing.T) {
	for _, c := range plantedCases() {
		t.Run(c.name, func(t *testing.T) {
			caught := 0
			for seed := uint64(1); seed <= uint64(*plantRuns); seed++ {
				synctest.Test(t, func(t *testing.T) {
					res := runChaos(t, chaosOptions{seed: seed, nodes: 3, length: 240 * time.Second, fams: allFamilies(), maxRate: chaosDrift, margin: -1,
						wrap: func(co tenure.Coordinator, cfg tenure.Config) tenure.Coordinator { return plant.Wrap(co, c.bug, cfg) }})
					if res.overlap.Count > 0 {
						caught++
					}
					if res.stale.Count > 0 || res.accepted == 0 {
						t.Errorf("seed %d: %d writes accepted, stale writes accepted %d; want some, none:\n%s", seed, res.accepted, res.stale.Count, res.describe(seed))
					}
				})
			}
			t.Logf("planted bug %q: overlap reported in %d of %d drawn schedules", c.name, caught, *plantRuns)
		})
	}
}
