package partition_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure/partition"
)

// TestFailedTableReadsSpendTheBudget: a member reads the whole partition
// table (O(P) for the coordinator) when its view of the membership settles,
// at most once per read budget (readEvery: P/1,000 seconds, 2s here) beyond
// its retries, which back off from RetryPeriod. A read that failed must
// spend the budget as one that succeeded did: the coordinator did the work,
// and one too slow to answer in time (a loaded etcd at 100,000 partitions)
// is the one to spare. Counted from successes only, every change of the
// membership read the table again while the reads kept failing, and the
// reads kept the coordinator too busy to renew memberships.
func TestFailedTableReadsSpendTheBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 2000)
		defer c.close()
		link := &replyLosingLink{Coordinator: c.coord}
		c.wrap = map[string]partition.Coordinator{"a": link}
		c.start("a")
		c.start("b")
		c.await("the members settle", 10*time.Second, c.settled)
		link.slow.Store(true)
		tables := link.tables.Load()
		const changes, every = 16, 500 * time.Millisecond
		for i := range changes { // c comes and goes: each change settles after Debounce
			if i%2 == 0 {
				c.start("c")
			} else {
				c.stop("c")
			}
			time.Sleep(every)
		}
		reads := link.tables.Load() - tables
		if want := int64(8); reads > want {
			t.Errorf("a read the partition table %d times in %s while every read failed and the membership changed %d times; want at most %d: retries after 0.3, 0.6, 1.2s, then one per read budget of 2s", reads, changes*every, changes, want)
		}
		link.slow.Store(false)
		c.await("every partition runs", 3*c.cfg.TTL, c.settled)
		t.Logf("a read the partition table %d times in %s", reads, changes*every)
		c.check()
	})
}
