package partition_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure/internal/timing"

	"github.com/tenure-dev/tenure/partition"

	"github.com/tenure-dev/tenure/internal/timerwait"
	"github.com/tenure-dev/tenure/memory"
)

// pacedLink is one member's link to the memory coordinator whose claims
// take perPartition for every partition asked for, as a coordinator that
// applies them one after another; it records each claim's size and time.
type pacedLink struct {
	*memory.Coordinator
	perPartition time.Duration

	mu    sync.Mutex
	sizes []int
	took  []time.Duration
}

func (l *pacedLink) ClaimPartitions(ctx context.Context, m partition.Member, names []string) ([]partition.ClaimResult, error) {
	start := time.Now()
	res, err := l.Coordinator.ClaimPartitions(ctx, m, names)
	select {
	case <-time.After(timerwait.Delay(time.Duration(len(names)) * l.perPartition)):
	case <-ctx.Done():
		err = ctx.Err()
	}
	l.mu.Lock()
	l.sizes, l.took = append(l.sizes, len(names)), append(l.took, time.Since(start))
	l.mu.Unlock()
	return res, err
}

// TestClaimsSizedToTheCoordinatorsPace: a member claims its partitions in
// batches sized so that each claim answers within half a RetryPeriod: on a
// coordinator that takes 1ms a partition, no claim may take longer than a
// RetryPeriod (300ms), where claims of 1,024 took 1s each, and the renewal
// that waited behind them (in the coordinator's queue and in the member's
// step) as long. On a coordinator that answers at once, batches grow to
// 1,024, so that a cold start is not slowed down.
func TestClaimsSizedToTheCoordinatorsPace(t *testing.T) {
	for _, pace := range []time.Duration{time.Millisecond, 0} {
		t.Run(pace.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newCluster(t, 3000)
				defer c.close()
				link := &pacedLink{Coordinator: c.coord, perPartition: pace}
				c.wrap = map[string]partition.Coordinator{"a": link}
				c.start("a")
				took := c.await("a runs every partition", 5*c.cfg.TTL, c.settled)
				c.close()
				slowest := slices.Max(link.took)
				t.Logf("a ran its %d partitions %s after it started, in claims of %v, the slowest %s", c.cfg.Partitions, took, link.sizes, slowest)
				if limit := timing.RetryPeriod(c.cfg.TTL, c.cfg.RetryPeriod); pace > 0 && slowest > limit {
					t.Errorf("a claim took %s; want at most a RetryPeriod, %s (sizes %v)", slowest, limit, link.sizes)
				}
				if most := slices.Max(link.sizes); pace == 0 && most != 1024 {
					t.Errorf("the largest claim on a coordinator that answers at once asked for %d partitions; want 1024 (sizes %v)", most, link.sizes)
				}
			})
		})
	}
}
