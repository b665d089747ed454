package partition_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/partition"
)

// TestOrphanReleaseFreesNoRunningPartition tries to make a member
// release, as an orphan, a partition it runs: three members share 6
// partitions while late claims (claims applied after their call returned
// an error, as etcd can apply them) are made for a random member's live
// membership on random partitions every few hundred milliseconds, and one
// member comes and goes. Each partition function checks, every 5ms while
// its term's Check passes, that the coordinator has the partition owned by
// its member: free, or owned by another member, is a partition released
// under it (two holders once claimed). Once the late claims stop, every
// partition must be run again (the orphans freed) and the members must
// have released orphans (the path was taken).
func TestOrphanReleaseFreesNoRunningPartition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 6)
		defer c.close()
		var logs lockedBuffer
		// Table reads every 3 s to 4.5 s, often inside a change's debounce,
		// when the target has moved partitions the member still runs.
		c.cfg.RenewInterval, c.cfg.RetryPeriod, c.cfg.Debounce = 300*time.Millisecond, 100*time.Millisecond, 2*time.Second
		c.cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
		var mu sync.Mutex
		var bad []string
		acts := 0
		c.fn = func(ctx context.Context, p partition.Partition, term *tenure.Term) error {
			for ctx.Err() == nil && term.Check() == nil {
				gs, err := c.coord.GroupPartitions(context.Background(), c.cfg.Key)
				owner := ""
				for _, g := range gs {
					if g.Key == p.Key {
						owner = g.Holder
					}
				}
				if term.Check() != nil {
					break // judged by a Check after the read: see checkOnly.act
				}
				mu.Lock()
				acts++
				if err != nil || owner != term.Grant().Holder {
					bad = append(bad, fmt.Sprintf("%s acted on %s (token %d) while the coordinator had it owned by %q (err %v)", term.Grant().Holder, p.Key, term.Token(), owner, err))
				}
				mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
			return nil
		}
		c.start("a")
		c.start("b")
		c.await("a and b settle", 10*time.Second, c.settled)
		names := c.cfg.PartitionNames()
		rng := rand.New(rand.NewPCG(1, 2))
		for i := range 200 {
			if i%10 == 0 {
				if _, ok := c.nodes["c"]; ok {
					c.stop("c")
				} else {
					c.start("c")
				}
			}
			ms, err := c.coord.GroupMembers(context.Background(), c.cfg.Key)
			if err != nil || len(ms) == 0 {
				t.Fatalf("GroupMembers = %v, %v", ms, err)
			}
			m := ms[rng.IntN(len(ms))]
			pick := []string{names[rng.IntN(len(names))], names[rng.IntN(len(names))]}
			if free := freeNow(t, c); len(free) > 0 { // one freed a moment ago, in a hand-over
				pick[1] = free[rng.IntN(len(free))]
			}
			if _, err := c.coord.ClaimPartitions(context.Background(), m, pick); err != nil {
				t.Fatalf("late claim of %v for %s = %v", pick, m, err)
			}
			time.Sleep(time.Duration(50+rng.IntN(400)) * time.Millisecond)
		}
		c.await("every partition run again after the late claims", 60*time.Second, c.settled)
		c.close()
		mu.Lock()
		defer mu.Unlock()
		if acts == 0 {
			t.Fatal("no partition function acted")
		}
		for i, s := range bad {
			if i == 5 {
				t.Errorf("… and %d more", len(bad)-5)
				break
			}
			t.Error(s)
		}
		released := 0
		for _, w := range logs.warnings() {
			if strings.Contains(w, "releasing partitions owned but not run") {
				released++
			}
		}
		if released == 0 {
			t.Error("no member released an orphan: the test did not exercise freeOrphans")
		}
		t.Logf("%d acts checked, %d orphan releases logged", acts, released)
	})
}

// freeNow lists the partitions of c's group that nobody owns now.
func freeNow(t *testing.T, c *cluster) []string {
	gs, err := c.coord.GroupPartitions(context.Background(), c.cfg.Key)
	if err != nil {
		t.Fatalf("GroupPartitions = %v", err)
	}
	owned := map[string]bool{}
	for _, g := range gs {
		owned[g.Key] = true
	}
	var free []string
	for _, n := range c.cfg.PartitionNames() {
		if !owned[partition.Key(c.cfg.Key, n)] {
			free = append(free, n)
		}
	}
	return free
}
