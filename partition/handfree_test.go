package partition_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure/internal/timing"
)

// TestHandFreedPartitionEndsWithinARenewal: an operator frees partition 1,
// which member a runs, by hand (on etcd `tenure release --force` of its key
// or etcdctl del; on PostgreSQL an UPDATE), and member x claims it at once.
// Member a must end its term on it at its next renewal, which checks the
// partitions it runs: at most one renewal interval after the free (the
// memory coordinator answers at once). Before the check, a ran it beside x
// for as long as its membership lived. x announces another partition count,
// so a leaves it out of its assignment and nothing is handed over to it.
func TestHandFreedPartitionEndsWithinARenewal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 4)
		defer c.close()
		c.start("a")
		c.await("a owns every partition", 5*time.Second, c.settled)
		ctx := context.Background()
		x, err := c.coord.JoinGroup(ctx, c.cfg.Key, "x#1", time.Hour, 5)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(timing.RenewInterval(c.cfg.TTL, c.cfg.RenewInterval) / 2) // between two renewals
		c.coord.FreePartition(c.cfg.Key, "1")
		res, err := c.coord.ClaimPartitions(ctx, x, []string{"1"})
		if err != nil || res[0].Err != nil {
			t.Fatalf("x's claim of the freed partition = %+v, %v; want a grant", res, err)
		}
		bound := c.renewInterval()
		took := c.await("a's term on partition 1 ends", 3*c.cfg.TTL, func() bool {
			_, runs := c.owners()["jobs/1"]
			return !runs
		})
		if took > bound {
			t.Errorf("a ran partition 1 for %s after it was freed and claimed by x; want at most one renewal interval, %s", took, bound)
		}
		time.Sleep(c.cfg.TTL) // a claims partition 1 again, in vain, while x holds it
		if _, runs := c.owners()["jobs/1"]; runs {
			t.Errorf("a runs partition 1 again while x holds it")
		}
		if err := c.coord.LeaveGroup(ctx, x); err != nil {
			t.Fatal(err)
		}
		c.await("a runs partition 1 again once x left", 3*c.cfg.TTL, c.settled)
		t.Logf("a's term on partition 1 ended %s after the free (bound %s)", took, bound)
		c.check()
	})
}

// renewInterval is how often the cluster's members renew while renewals
// are answered at once: the Elector's schedule, timing.NextRenewal.
func (c *cluster) renewInterval() time.Duration {
	return timing.NextRenewal(timing.RenewInterval(c.cfg.TTL, c.cfg.RenewInterval), c.cfg.TTL, timing.SafeLease(c.cfg.TTL, c.cfg.MaxDrift, c.cfg.Margin))
}
