package memory_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/termcheck"
	"github.com/tenure-dev/tenure/memory"
	"github.com/tenure-dev/tenure/partition"

	"github.com/tenure-dev/tenure"
)

// TestElectorAndGroupOfOneProcess runs, in one process on one Coordinator,
// a partition Group "jobs" and an Elector for key "jobs/0", both of one
// identity (Holder and Instance, as identity.ProcessInstance gives every
// Elector and Group of a process, and which Run accepts: the rule against
// one identity twice is per key for Electors and per group for Groups).
// termcheck judges every act of either side (a Term.Check that passed): no
// term may pass Check after a term with a greater token did, nor while the
// other side's term passes it (both acting at once). The Elector's Acquire
// must be refused while the member lives.
func TestElectorAndGroupOfOneProcess(t *testing.T) {
	c := memory.New()
	t.Cleanup(func() { c.Close() })
	l := termcheck.New()
	work := func(who string, ctx context.Context, term *tenure.Term) error {
		defer l.Run("jobs/0", who, term)()
		for ctx.Err() == nil {
			l.Act("jobs/0", who, term)
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
	l.Verify(t)
	if n := l.Terms("elector"); n > 0 {
		t.Errorf("the Elector led %d terms while the member lived; want its Acquire refused", n)
	}
	t.Logf("%d acts of %d terms", l.Acts(), l.Terms(""))
}
