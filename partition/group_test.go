package partition_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/memory"
	"github.com/tenure-dev/tenure/partition"
)

func TestGroupBalancesAndHandsOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 30)
		defer c.close()
		for _, n := range []string{"a", "b", "c"} {
			c.start(n)
		}
		c.await("3 members settle", 5*time.Second, c.settled)

		c.start("d")
		before := c.owners()
		c.await("a 4th member gets its share", 5*time.Second, func() bool {
			return c.settled() && len(c.nodes["d"].g.Snapshot().Owned) > 0
		})
		if got, limit := moves(before, c.owners()), 9; got > limit {
			t.Errorf("a join moved %d partitions; want ≤ %d (1.1·P/N)", got, limit)
		}

		// A planned leave hands over without waiting for the TTL.
		before = c.owners()
		c.stop("a")
		took := c.await("a's partitions re-owned after it left", c.cfg.TTL, c.settled)
		if took >= c.cfg.TTL/2 {
			t.Errorf("handover after a planned leave took %s; want well under the TTL %s", took, c.cfg.TTL)
		}
		if got, limit := moves(before, c.owners()), 11; got > limit {
			t.Errorf("a leave moved %d partitions; want ≤ %d (1.1·P/N)", got, limit)
		}
		c.check()
	})
}

func TestGroupTakesOverFromACrashedMember(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 20)
		defer c.close()
		for _, n := range []string{"a", "b"} {
			c.start(n)
		}
		c.await("2 members settle", 5*time.Second, c.settled)
		tokens := map[string]uint64{}
		for _, o := range c.nodes["a"].g.Snapshot().Owned {
			tokens[o.Partition.Key] = o.Token
		}

		// a is cut off and stopped: it cannot leave; its membership expires.
		c.coord.Partition("a")
		c.stop("a")
		c.await("a's partitions re-owned after its lease expired", 2*c.cfg.TTL, c.settled)
		for _, o := range c.nodes["b"].g.Snapshot().Owned {
			if old, ok := tokens[o.Partition.Key]; ok && o.Token <= old {
				t.Errorf("%s taken over with token %d; want > %d", o.Partition.Key, o.Token, old)
			}
		}
		c.check()
	})
}

func moves(before, after map[string]string) int {
	n := 0
	for k, v := range before {
		if after[k] != v {
			n++
		}
	}
	return n
}

// TestGroupLeaveRightAfterAJoin: a planned leave just after a join's
// hand-over moves only the leaver's partitions, and at once: members must
// not act on a view of the table taken while the join's hand-over was under
// way (that would cost a renewal interval of disagreement).
func TestGroupLeaveRightAfterAJoin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 40)
		defer c.close()
		for _, n := range []string{"a", "b", "c"} {
			c.start(n)
		}
		c.await("3 members settle", 5*time.Second, c.settled)
		c.start("d")
		c.await("d gets its share", 5*time.Second, func() bool {
			return c.settled() && len(c.nodes["d"].g.Snapshot().Owned) == 10
		})
		before := c.owners()
		own := len(c.nodes["a"].g.Snapshot().Owned)
		c.stop("a")
		took := c.await("a's partitions re-owned after it left", 5*time.Second, c.settled)
		// The members poll every 100ms here (the memory coordinator does not
		// watch); a stale view would wait for the next read of the table, a
		// renewal interval (1s) away.
		if limit := 500 * time.Millisecond; took > limit {
			t.Errorf("hand-over after a planned leave took %s; want ≤ %s", took, limit)
		}
		if got := moves(before, c.owners()); got != own {
			t.Errorf("a leave moved %d partitions; want only the leaver's %d", got, own)
		}
		c.check()
	})
}

// noTable is a coordinator whose partition table cannot be read (every read
// times out, say).
type noTable struct{ *memory.Coordinator }

func (noTable) GroupPartitions(context.Context, string) ([]tenure.Grant, error) {
	return nil, errors.New("partition table unreadable")
}

// TestGroupMemberThatCannotReadTheTable: a member whose reads of the
// partition table fail still settles on the assignment it computes from
// the membership, and claims its share.
func TestGroupMemberThatCannotReadTheTable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 20)
		defer c.close()
		c.wrap = map[string]partition.Coordinator{"a": noTable{c.coord}}
		c.start("a")
		c.start("b")
		c.await("a and b settle", 5*time.Second, func() bool {
			return c.settled() && len(c.nodes["a"].g.Snapshot().Owned) == 10
		})
		c.check()
	})
}
