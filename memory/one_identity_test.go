package memory_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/memory"
	"github.com/tenure-dev/tenure/partition"

	"github.com/tenure-dev/tenure"
)

// TestElectorAndGroupOfOneProcess runs, in one process on one
// Coordinator, a partition Group "jobs" and an Elector for key "jobs/0",
// both of one identity (Holder and Instance, as identity.ProcessInstance
// gives every Elector and Group of a process, and which Run accepts: the
// rule against one identity twice is per key for Electors and per group
// for Groups). It records every successful Term.Check of each side and
// fails when one side's term passes Check after the other side's term
// with a greater token did: both acting at once. The Elector's Acquire
// must be refused while the member lives. It passed when written: kept as
// a regression test (etcd fails it: see etcd/one_identity_test.go).
func TestElectorAndGroupOfOneProcess(t *testing.T) {
	c := memory.New()
	t.Cleanup(func() { c.Close() })
	type check struct {
		who   string
		token uint64
		at    time.Time
	}
	var mu sync.Mutex
	var checks []check
	work := func(who string, ctx context.Context, term *tenure.Term) error {
		for ctx.Err() == nil {
			if term.Check() == nil {
				mu.Lock()
				checks = append(checks, check{who, term.Token(), time.Now()})
				mu.Unlock()
			}
			time.Sleep(10 * time.Millisecond)
		}
		return nil
	}
	gcfg := partition.DefaultConfig()
	gcfg.Key, gcfg.Partitions, gcfg.Holder, gcfg.Instance, gcfg.TTL = "jobs", 1, "node", "1", 3*time.Second
	g, err := partition.New(c, gcfg)
	if err != nil {
		t.Fatal(err)
	}
	ecfg := tenure.DefaultConfig()
	ecfg.Key, ecfg.Holder, ecfg.Instance, ecfg.TTL = "jobs/0", "node", "1", 3*time.Second
	e, err := tenure.NewElector(c, ecfg)
	if err != nil {
		t.Fatal(err)
	}
	run, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		_ = g.Run(run, func(ctx context.Context, p partition.Partition, term *tenure.Term) error {
			return work("group", ctx, term)
		})
	})
	time.Sleep(time.Second) // the group's member owns jobs/0
	wg.Go(func() {
		_ = e.Run(run, func(ctx context.Context, term *tenure.Term) error { return work("elector", ctx, term) })
	})
	time.Sleep(3 * time.Second)
	stop()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	newest := map[string]check{} // each side's newest check so far
	overlaps := 0
	for _, ch := range checks {
		for who, o := range newest {
			if who != ch.who && o.token > ch.token {
				if overlaps == 0 {
					t.Errorf("%s's term (token %d) passed Check at %s, after %s's term with token %d had at %s: both act at once",
						ch.who, ch.token, ch.at.Format("15:04:05.000"), who, o.token, o.at.Format("15:04:05.000"))
				}
				overlaps++
			}
		}
		newest[ch.who] = ch
	}
	t.Logf("%d checks, %d of them by a term older than the other side's newest", len(checks), overlaps)
}
