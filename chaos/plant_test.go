package chaos

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	plantRuns        = flag.Int("chaos.runs", 20, "seeded runs per planted bug in TestPlantedBugsAreCaught")
	plantConcurrency = flag.Int("chaos.concurrency", 4, "runs at once in TestPlantedBugsAreCaught")
)

// shortRun runs a short, fault-dense verification: every fault strikes the
// leader of the moment.
// plantDrift is the MaxDrift of planted-bug runs.
const plantDrift = 0.05

func shortRun(seed uint64, plant string, fams []string, d time.Duration) (*Report, error) {
	h, err := Run(context.Background(), Options{
		Seed: seed, Duration: d, Families: fams, Plant: plant, NodeCommand: testNodeCommand,
		FaultStart: 1500 * time.Millisecond, FaultTail: time.Second, MaxGap: 600 * time.Millisecond,
		LeaderOnly: true, CheckTimeout: 20 * time.Second,
		// A wider drift allowance widens the window a bug must respect
		// (the last TTL·MaxDrift of a lease), so that a missing margin
		// shows at nearly every lease that ends.
		MaxDrift: plantDrift,
	})
	if err != nil {
		return nil, err
	}
	return Analyze(h), nil
}

func describe(r *Report) string {
	var b strings.Builder
	r.WriteSummary(&b)
	return b.String()
}

// TestPlantedBugsAreCaught proves the checkers can fail: each planted bug is
// reported as a violation in at least 19 of 20 short seeded runs, under the
// faults that make it visible, and the build as shipped reports none in the
// same seeds under all of those faults together.
func TestPlantedBugsAreCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 100 short verifications")
	}
	const length = 9 * time.Second
	// least is how many of 20 runs must report a violation.
	cases := []struct {
		plant string
		fams  []string
		least int
	}{
		{PlantNone, []string{FamilyPause, FamilyLatency, FamilyPartition}, 0},
		{PlantNoToken, []string{FamilyPause}, 19},
		{PlantReplyDeadline, []string{FamilyLatency}, 19},
		{PlantNoMargin, []string{FamilyPartition}, 19},
		{PlantRenewAfterExpiry, []string{FamilyPartition}, 19},
	}
	type job struct {
		c    int
		seed uint64
	}
	caught := make([]int, len(cases))
	example := make([]string, len(cases))
	var mu sync.Mutex
	jobs := make(chan job)
	var wg sync.WaitGroup
	start := time.Now()
	for range *plantConcurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				c := cases[j.c]
				rep, err := shortRun(j.seed, c.plant, c.fams, length)
				if err != nil {
					t.Errorf("plant %q seed %d: %v", c.plant, j.seed, err)
					continue
				}
				mu.Lock()
				if !rep.OK() {
					caught[j.c]++
					if example[j.c] == "" || c.plant == PlantNone {
						example[j.c] += fmt.Sprintf("seed %d:\n%s\n", j.seed, describe(rep))
					}
				}
				mu.Unlock()
				if rep.WritesAccepted == 0 {
					t.Errorf("plant %q seed %d: no write accepted:\n%s", c.plant, j.seed, describe(rep))
				}
			}
		}()
	}
	for seed := uint64(1); seed <= uint64(*plantRuns); seed++ {
		for c := range cases {
			jobs <- job{c, seed}
		}
	}
	close(jobs)
	wg.Wait()
	t.Logf("%d runs of %s in %s", *plantRuns*len(cases), length, time.Since(start).Round(time.Second))
	for i, c := range cases {
		name := c.plant
		if name == PlantNone {
			name = "none"
		}
		t.Logf("planted bug %-18s faults %-26s violation reported in %2d of %d runs", name, strings.Join(c.fams, ","), caught[i], *plantRuns)
		switch {
		case c.plant == PlantNone && caught[i] > 0:
			t.Errorf("the build as shipped reported violations in %d of %d runs:\n%s", caught[i], *plantRuns, example[i])
		case c.plant != PlantNone && caught[i]*20 < c.least**plantRuns:
			t.Errorf("planted bug %q caught in %d of %d runs; want at least %d of 20", c.plant, caught[i], *plantRuns, c.least)
		}
	}
}
