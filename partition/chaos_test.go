package partition_test

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure/internal/plant"
	"github.com/tenure-dev/tenure/partition"
)

var chaosSeeds = flag.Int("partition.seeds", 50, "seeds of TestGroupChaos (CI: -partition.seeds 300)")

// TestGroupChaos runs four members of a 16-partition group through random
// faults (crashes without leaving, network partitions, lost replies,
// latency, coordinator restarts, graceful restarts) for many seeds, and
// checks per partition that no two owners' terms overlap, that tokens only
// increase, and that every partition is owned again, balanced, once the
// faults heal.
func TestGroupChaos(t *testing.T) {
	seeds := *chaosSeeds
	if testing.Short() {
		seeds = min(seeds, 20)
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { chaosRun(t, seed) })
		})
	}
}

func chaosRun(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	c := newCluster(t, 16)
	defer c.close()
	names := []string{"a", "b", "c", "d"}
	for _, n := range names {
		c.startNew(n)
	}
	var log []string
	end := time.Now().Add(40 * time.Second)
	for time.Now().Before(end) {
		time.Sleep(time.Duration(200+rng.IntN(2800)) * time.Millisecond)
		n := names[rng.IntN(len(names))]
		_, running := c.nodes[n]
		switch f := rng.IntN(7); {
		case !running:
			c.coord.Heal(n)
			c.startNew(n)
			log = append(log, "restart "+n)
		case f == 0: // crash: no leave, lease expires
			c.coord.Partition(n)
			c.stop(n)
			log = append(log, "crash "+n)
		case f == 1:
			c.stop(n)
			log = append(log, "stop "+n)
		case f == 2:
			c.coord.Partition(n)
			log = append(log, "partition "+n)
		case f == 3:
			c.coord.DropReplies(n, true)
			log = append(log, "drop-replies "+n)
		case f == 4:
			d := time.Duration(rng.IntN(1500)) * time.Millisecond
			c.coord.SetLatency(n, d/2, d/2)
			log = append(log, fmt.Sprintf("latency %s %s", n, d))
		case f == 5:
			c.coord.Restart()
			log = append(log, "coordinator-restart")
		default:
			c.coord.Heal(n)
			log = append(log, "heal "+n)
		}
	}
	c.coord.HealAll()
	for _, n := range names {
		if _, running := c.nodes[n]; !running {
			c.startNew(n)
		}
	}
	log = append(log, "heal-all")
	if !c.within(4*c.cfg.TTL, c.settled) {
		t.Errorf("seed %d: partitions not all owned and balanced %s after the faults healed; owners %v\nschedule: %s", seed, 4*c.cfg.TTL, c.owners(), strings.Join(log, ", "))
		c.dump()
	}
	c.check()
	if t.Failed() {
		t.Logf("schedule: %s", strings.Join(log, ", "))
	}
}

// TestGroupChaosCatchesPlantedBug: a member whose membership renewals are
// reported done when they fail (internal/plant's renew-after-expiry, moved
// to the membership by plant.WrapGroup) is cut off from the coordinator
// for two TTLs: its partitions carry on past its lease while the other
// member claims them, and the chaos checkers report the overlapping terms.
// The control run of the same schedule, without the bug, reports nothing.
func TestGroupChaosCatchesPlantedBug(t *testing.T) {
	for _, planted := range []bool{false, true} {
		t.Run(fmt.Sprintf("planted=%v", planted), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newCluster(t, 8)
				if planted {
					c.wrap = map[string]partition.Coordinator{"a": plant.WrapGroup(c.coord, plant.RenewAfterExpiry, c.cfg.Config)}
				}
				c.start("a")
				c.start("b")
				time.Sleep(2 * c.cfg.TTL)
				c.coord.Partition("a")
				time.Sleep(2 * c.cfg.TTL)
				c.coord.Heal("a")
				time.Sleep(2 * c.cfg.TTL)
				c.close()
				rep := c.rec.analyze(c.cfg.Partitions)
				if planted && rep.overlap.Count == 0 {
					t.Errorf("no overlap reported with a member whose failed renewals are reported done; want overlaps")
				}
				if !planted && rep.overlap.Count+rep.order.Count > 0 {
					t.Errorf("the control run reported violations: %v %v", rep.overlap.Details, rep.order.Details)
				}
				if rep.order.Count > 0 || rep.terms < c.cfg.Partitions {
					t.Errorf("token order violations %v, %d terms; want none and at least one per partition", rep.order.Details, rep.terms)
				}
			})
		})
	}
}
