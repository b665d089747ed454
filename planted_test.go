package tenure_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/plant"
)

// Planted bugs prove the chaos checker can fail. Each wraps the memory
// coordinator (package internal/plant, the same wrappers tenure verify
// plants) so that the elector behaves as a buggy one would: a deadline
// measured from the reply, no safety margin, a renewal allowed after expiry.

func TestChaosCatchesPlantedBugs(t *testing.T) {
	const runs = 20
	bugs := []struct {
		name string
		fams []family
		rate float64
		bug  string // "" plants nothing
		// least is how many of the runs must report an overlap (seen:
		// 19 or 20 of 20 for each bug).
		least int
	}{
		{"none", []family{famLatency, famDegrade, famPartition, famBlock}, chaosDrift, "", 0},
		{"deadline from reply", []family{famLatency, famDegrade, famPartition, famBlock}, 0, plant.ReplyDeadline, 18},
		{"no margin", []family{famLatency, famDegrade, famPartition, famBlock, famDrift}, chaosDrift, plant.NoMargin, 18},
		{"renewal after expiry", []family{famPartition, famBlock}, 0, plant.RenewAfterExpiry, 18},
	}
	for _, bug := range bugs {
		t.Run(bug.name, func(t *testing.T) {
			caught := 0
			var example string
			for seed := uint64(1); seed <= runs; seed++ {
				synctest.Test(t, func(t *testing.T) {
					o := chaosOptions{seed: seed, nodes: 3, length: 240 * time.Second, fams: bug.fams, maxRate: bug.rate, margin: -1}
					if bug.bug != "" {
						o.wrap = func(c tenure.Coordinator, cfg tenure.Config) tenure.Coordinator {
							return plant.Wrap(c, bug.bug, cfg)
						}
					}
					res := runChaos(t, o)
					if len(res.orderBreaches) > 0 {
						t.Errorf("seed %d: the fenced register accepted a stale write:\n%s", seed, res.describe(seed))
					}
					if len(res.overlaps) > 0 {
						caught++
						if example == "" {
							example = fmt.Sprintf("seed %d: %s (%d overlaps, %s in all)", seed, res.overlaps[0], len(res.overlaps), res.overlapTotal)
						}
					}
				})
			}
			t.Logf("planted bug %q: overlap reported in %d of %d runs; e.g. %s", bug.name, caught, runs, example)
			if bug.bug == "" && caught > 0 {
				t.Fatalf("unplanted build reported overlaps in %d of %d runs: %s", caught, runs, example)
			}
			if caught < bug.least {
				t.Fatalf("planted bug %q caught in %d of %d runs; want at least %d", bug.name, caught, runs, bug.least)
			}
		})
	}
}
