package partitiontest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/termcheck"
	"github.com/tenure-dev/tenure/partition"

	"github.com/tenure-dev/tenure"
)

// electorAndGroupOfOneProcess runs, in one process on one coordinator, a
// partition Group of one partition and an Elector for that partition's key,
// both of one identity (Holder and Instance, as identity.ProcessInstance
// gives every Elector and Group of a process, and which Run accepts: the
// rule against one identity twice is per key for Electors and per group
// for Groups). termcheck judges every act of either side (a Term.Check
// that passed): no term may pass Check after a term with a greater token
// did, nor while the other side's term passes it (both acting at once).
// The Elector's Acquire must be refused while the member lives: it leads
// no term.
func (s suite) electorAndGroupOfOneProcess(t *testing.T) {
	c := s.group(t)
	g := groupName(t)
	key := g + "/0"
	l := termcheck.New()
	started := make(chan struct{})
	var once sync.Once
	work := func(who string, ctx context.Context, term *tenure.Term) error {
		defer l.Run(key, who, term)()
		for ctx.Err() == nil {
			l.Act(key, who, term)
			if who == "group" {
				once.Do(func() { close(started) })
			}
			time.Sleep(10 * time.Millisecond)
		}
		return nil
	}
	gcfg := partition.DefaultConfig()
	gcfg.Key, gcfg.Partitions, gcfg.Holder, gcfg.Instance, gcfg.TTL = g, 1, "node", "1", 3*time.Second
	grp, err := partition.New(c, gcfg)
	if err != nil {
		t.Fatal(err)
	}
	ecfg := tenure.DefaultConfig()
	ecfg.Key, ecfg.Holder, ecfg.Instance, ecfg.TTL = key, "node", "1", 3*time.Second
	e, err := tenure.NewElector(c, ecfg)
	if err != nil {
		t.Fatal(err)
	}
	run, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		_ = grp.Run(run, func(ctx context.Context, p partition.Partition, term *tenure.Term) error {
			return work("group", ctx, term)
		})
	})
	select {
	case <-started: // the group's member runs the partition
	case <-time.After(gcfg.TTL + s.o.slack):
		stop()
		wg.Wait()
		t.Fatalf("the group's member ran no partition of %q within %s", g, gcfg.TTL+s.o.slack)
	}
	wg.Go(func() {
		_ = e.Run(run, func(ctx context.Context, term *tenure.Term) error { return work("elector", ctx, term) })
	})
	time.Sleep(gcfg.TTL)
	stop()
	wg.Wait()
	l.Verify(t)
	if n := l.Terms("elector"); n > 0 {
		t.Errorf("the Elector led %d terms of %q while the member that owns it lived; want its Acquire refused", n, key)
	}
	t.Logf("%d acts of %d terms", l.Acts(), l.Terms(""))
}
