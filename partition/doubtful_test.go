package partition_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure/internal/timing"

	"github.com/tenure-dev/tenure/partition"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/memory"
)

// replyLosingLink is one member's link to the memory coordinator. When
// armed, it loses the reply of one claim: the coordinator applied it, the
// member is told the call failed, as when a reply is lost or comes after
// the request's timeout.
type replyLosingLink struct {
	*memory.Coordinator
	armed  atomic.Bool
	lost   atomic.Int64 // partitions asked for in the claim whose reply was lost
	tables atomic.Int64 // reads of the partition table
	slow   atomic.Bool  // reads of the partition table time out
}

func (l *replyLosingLink) ClaimPartitions(ctx context.Context, m partition.Member, names []string) ([]partition.ClaimResult, error) {
	res, err := l.Coordinator.ClaimPartitions(ctx, m, names)
	if err == nil && l.armed.CompareAndSwap(true, false) {
		l.lost.Store(int64(len(names)))
		return nil, fmt.Errorf("claim of %d partitions: reply lost: %w", len(names), context.DeadlineExceeded)
	}
	return res, err
}

func (l *replyLosingLink) GroupPartitions(ctx context.Context, group string) ([]tenure.Grant, error) {
	l.tables.Add(1)
	if l.slow.Load() {
		return nil, fmt.Errorf("partitions of %q: %w", group, context.DeadlineExceeded)
	}
	return l.Coordinator.GroupPartitions(ctx, group)
}

// TestClaimWithLostReply: member a claims b's partitions when b leaves,
// and the claim's reply is lost; b comes back before a knows. Those
// partitions are a's at the coordinator, a does not run them, and its
// membership gives them to b again: a must claim them again (a claim of a
// partition it owns grants it again), find them granted, and release
// them, so that b runs them within a few steps. Without that, b's claims are
// refused (held by a live member) for as long as a lives. It costs no read
// of the partition table beyond the ones the membership change reads (a
// read of the whole table, O(P), was how they used to be found).
func TestClaimWithLostReply(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 8)
		defer c.close()
		link := &replyLosingLink{Coordinator: c.coord}
		c.wrap = map[string]partition.Coordinator{"a": link}
		c.start("a")
		c.start("b")
		c.await("the members settle", 10*time.Second, c.settled)
		before := c.owners()
		link.armed.Store(true)
		c.stop("b")
		c.await("a's claim of b's partitions, its reply lost", c.cfg.TTL, func() bool { return !link.armed.Load() })
		tables := link.tables.Load()
		c.start("b")
		took := c.await("every partition runs, balanced", 3*c.cfg.TTL, c.settled)
		if took > c.cfg.TTL/3 {
			t.Errorf("b ran its partitions again %s after it came back; want within a renewal interval, %s", took, c.cfg.TTL/3)
		}
		if link.lost.Load() == 0 {
			t.Fatalf("a's claim whose reply was lost asked for nothing; the test did not test anything")
		}
		for key, owner := range before {
			if owner == "b" && c.owners()[key] != "b" {
				t.Errorf("partition %s runs on %s; want b again, as before it left", key, c.owners()[key])
			}
		}
		t.Logf("b runs its partitions again %s after it came back; a read the partition table %d times meanwhile", took, link.tables.Load()-tables)
		c.check()
	})
}

// TestClaimWithLostReplyReadsNoTable: a claim's reply is lost while the
// coordinator is too slow to answer a read of the whole partition table
// (at 100,000 partitions, a loaded etcd). The member must not retry that
// read at every step (ten a second) to find what it claimed unknowingly:
// each read is O(P) for the coordinator, and the retries kept a loaded one
// too busy to renew memberships. A failed read of the table is retried a
// RetryPeriod later at the soonest (later for a large group, see
// readEvery); the doubtful partitions are claimed again instead.
func TestClaimWithLostReplyReadsNoTable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 8)
		defer c.close()
		link := &replyLosingLink{Coordinator: c.coord}
		c.wrap = map[string]partition.Coordinator{"a": link}
		c.start("a")
		c.start("b")
		c.await("the members settle", 10*time.Second, c.settled)
		link.armed.Store(true)
		link.slow.Store(true)
		c.stop("b")
		c.await("a's claim of b's partitions, its reply lost", c.cfg.TTL, func() bool { return !link.armed.Load() })
		tables := link.tables.Load()
		time.Sleep(2 * time.Second)
		reads := link.tables.Load() - tables
		if want := int64(2*time.Second/timing.RetryPeriod(c.cfg.TTL, c.cfg.RetryPeriod)) + 1; reads > want {
			t.Errorf("a read the partition table %d times in the 2s after a claim whose reply was lost, every read timing out; want at most %d, one a RetryPeriod (%s): failed reads are retried no sooner, not at every step", reads, want, timing.RetryPeriod(c.cfg.TTL, c.cfg.RetryPeriod))
		}
		c.await("a runs every partition", c.cfg.TTL, c.settled)
		t.Logf("a read the partition table %d times in 2s", reads)
		c.check()
	})
}
