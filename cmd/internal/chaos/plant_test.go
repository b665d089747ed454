package chaos

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/history"
	"github.com/tenure-dev/tenure/internal/plant"
)

// exposing returns a schedule that contains the fault that exposes planted
// bug p, struck on the leader once it has led for a while.
func exposing(p string) []Fault {
	const ttl = 2 * time.Second
	switch p {
	case plant.NoToken:
		// A write in flight across a pause long enough for a newer leader
		// to write before it lands.
		return []Fault{{At: 3 * time.Second, Family: FamilyPause, Node: leaderNode, Dur: 2 * ttl}}
	case plant.ReplyDeadline, plant.NoMargin:
		// Replies late by the margin (a renewal of a few round trips
		// takes several margins), writes 50ms late (a quarter of the
		// margin: the shipped build keeps 150ms to spare), then the leader
		// is cut off from the coordinator.
		return []Fault{{At: 3 * time.Second, Family: FamilyDegrade, Node: leaderNode, Dur: 3 * ttl,
			Up: 10 * time.Millisecond, Down: ttl / 10, Write: 50 * time.Millisecond}}
	case plant.RenewAfterExpiry:
		return []Fault{{At: 3 * time.Second, Family: FamilyPartition, Node: leaderNode, Dur: 2 * ttl}}
	case plant.SlowClock, plant.WallClock:
		// The leader's clock runs half a percent slow (within the
		// bound) and its wall clock jumps one TTL ahead; then the
		// leader is cut off.
		return []Fault{{At: 3 * time.Second, Family: FamilyClock, Node: leaderNode, Dur: 2 * ttl, Rate: 0.995, Jump: ttl}}
	}
	return nil
}

// caughtBy returns the checker that must report planted bug p.
func caughtBy(p string) func(*Report) *history.Check {
	switch p {
	case plant.NoToken:
		return func(r *Report) *history.Check { return &r.StaleWrites }
	case plant.RenewAfterExpiry:
		return func(r *Report) *history.Check { return &r.Overlap }
	}
	return func(r *Report) *history.Check { return &r.LeaseOverrun }
}

// runSchedule runs the shipped TTL, margin and drift for 12 seconds on
// sched, with bug p planted.
func runSchedule(t *testing.T, p string, sched []Fault) *Report {
	t.Helper()
	return runScheduleOn(t, p, sched, func(*Options) {})
}

// runScheduleOn is runSchedule on the coordinator that coord sets in the
// options (embedded etcd when it sets none).
func runScheduleOn(t *testing.T, p string, sched []Fault, coord func(*Options)) *Report {
	t.Helper()
	h, err := Run(context.Background(), testOptions(func(o *Options) {
		o.Duration, o.Plant, o.Schedule = 12*time.Second, p, sched
		coord(o)
	}))
	if err != nil {
		t.Fatalf("Run(plant %q) = %v", p, err)
	}
	rep := Analyze(h)
	if rep.WritesAccepted == 0 {
		t.Fatalf("plant %q: no write accepted:\n%s", p, describe(rep))
	}
	if len(rep.Faults) != len(sched) || rep.Faults[0].Holder == "" || !ledAt(rep, rep.Faults[0]) {
		t.Fatalf("plant %q: the fault did not strike a leader: %+v\n%s", p, rep.Faults, describe(rep))
	}
	return rep
}

// ledAt reports whether the fault's target held a term when it struck.
func ledAt(r *Report, f FaultRecord) bool {
	for _, s := range r.Spans {
		if s.Holder == f.Holder && s.Start <= f.Start && f.Start <= s.End {
			return true
		}
	}
	return false
}

func describe(r *Report) string {
	var b strings.Builder
	r.WriteSummary(&b)
	return b.String()
}

// TestPlantedBugsAreCaught proves the checkers can fail on real processes:
// each planted bug is reported by its checker on a schedule that contains
// the fault exposing it, and the build as shipped reports nothing on the
// same schedule (the control run). The catch rate on drawn schedules is
// measured by BenchmarkPlantCatchRate.
func TestPlantedBugsAreCaught(t *testing.T) {
	t.Parallel() // its runs are apart from the other tests' runs
	testPlants(t, Plants(), 1, runSchedule, caughtBy)
}

// testPlants runs each planted bug of plants with run on the schedule that
// exposes it and checks that the checker caughtBy names reports it, and
// runs the build as shipped on each of those schedules (the controls) and
// checks that it reports nothing. A planted bug is given up to runs runs
// to be reported (each miss is logged with its summary); every control
// run must report nothing.
func testPlants(t *testing.T, plants []string, runs int, run func(*testing.T, string, []Fault) *Report, caughtBy func(string) func(*Report) *history.Check) {
	controls := map[string]bool{}
	for _, p := range plants {
		t.Run(p, func(t *testing.T) {
			t.Parallel()
			for i := 1; ; i++ {
				rep := run(t, p, exposing(p))
				c := caughtBy(p)(rep)
				if c.Count > 0 {
					return
				}
				if i == runs {
					t.Fatalf("planted bug %q not reported by %q in %d run(s); the last:\n%s", p, c.Name, runs, describe(rep))
				}
				t.Logf("planted bug %q not reported by %q in run %d of %d; running again:\n%s", p, c.Name, i, runs, describe(rep))
			}
		})
		fam := exposing(p)[0].Family
		if controls[fam] {
			continue
		}
		controls[fam] = true
		t.Run("control/"+fam, func(t *testing.T) {
			t.Parallel()
			if rep := run(t, plant.None, exposing(p)); !rep.OK() {
				t.Errorf("the build as shipped reported violations on the schedule that exposes %q:\n%s", p, describe(rep))
			}
		})
	}
}

// BenchmarkPlantCatchRate measures how often each planted bug is reported
// in a 20-second run at tenure verify's defaults (the shipped TTL, margin
// and drift, the fault families that expose the bug, seeds 1…b.N):
//
//	go test -run '^$' -bench PlantCatchRate -benchtime 20x ./cmd/internal/chaos/
func BenchmarkPlantCatchRate(b *testing.B) {
	for _, p := range Plants() {
		b.Run(p, func(b *testing.B) {
			caught := 0
			for i := range b.N {
				h, err := Run(context.Background(), testOptions(func(o *Options) {
					o.Seed, o.Duration, o.Plant = uint64(i+1), 20*time.Second, p
				}))
				if err != nil {
					b.Fatal(err)
				}
				if !Analyze(h).OK() {
					caught++
				}
			}
			b.ReportMetric(float64(caught)/float64(b.N), "caught/run")
		})
	}
}
