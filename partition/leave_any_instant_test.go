package partition_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/partition"
)

// checkOnly acts on every partition term it is given, every millisecond
// while the term's Check passes (whether or not the function has
// returned), as work guarded by Check alone does: each act must be backed
// by the memory coordinator, which has the partition owned by the term's
// holder under the term's token.
type checkOnly struct {
	c    *cluster
	wg   sync.WaitGroup
	mu   sync.Mutex
	acts map[string]int // by holder
	bad  []string
}

// fn wraps the partition function f: it starts the term's acts, then
// runs f.
func (g *checkOnly) fn(f partition.Func) partition.Func {
	return func(ctx context.Context, p partition.Partition, term *tenure.Term) error {
		g.wg.Go(func() {
			for term.Check() == nil {
				g.act(p, term)
				time.Sleep(time.Millisecond)
			}
		})
		return f(ctx, p, term)
	}
}

func (g *checkOnly) act(p partition.Partition, term *tenure.Term) {
	gs, err := g.c.coord.GroupPartitions(context.Background(), g.c.cfg.Key)
	owner, token := "", uint64(0)
	for _, gr := range gs {
		if gr.Key == p.Key {
			owner, token = gr.Holder, gr.Token
		}
	}
	// Judged by a Check after the read: a term once ended stays ended, so
	// a Check that passes now passed when the coordinator answered.
	if term.Check() != nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.acts[term.Grant().Holder]++
	if err == nil && owner == term.Grant().Holder && token == term.Token() {
		return
	}
	g.bad = append(g.bad, fmt.Sprintf("Check() of %s's term on %s (token %d) passed while the coordinator had it owned by %q with token %d (err %v)",
		term.Grant().Holder, p.Key, term.Token(), owner, token, err))
}

// A member's Run is cancelled at an instant of a renewal interval, its
// replies 500ms late (renewals in flight for half of each interval, its
// leave answered late), while another member takes over: every act
// guarded by a partition term's Check alone is backed by the coordinator,
// before, during and after the leave, and no two terms of a partition
// overlap.
func TestMemberLeavingAtAnyInstant(t *testing.T) {
	for _, at := range []time.Duration{
		0, 150 * time.Millisecond, 300 * time.Millisecond, 450 * time.Millisecond, 600 * time.Millisecond,
		750 * time.Millisecond, 900 * time.Millisecond, 1050 * time.Millisecond,
	} {
		t.Run(fmt.Sprint(at), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newCluster(t, 4)
				defer c.close()
				g := &checkOnly{c: c, acts: map[string]int{}}
				c.fn = g.fn(c.rec.fn)
				c.coord.SetLatency("a", 0, 500*time.Millisecond)
				c.start("a")
				c.start("b")
				c.await("a and b share the partitions", 10*time.Second, c.settled)
				time.Sleep(at)
				c.stop("a")
				c.await("b runs every partition", 10*time.Second, c.settled)
				time.Sleep(time.Second)
				c.check()
				g.wg.Wait()
				if len(g.bad) > 0 {
					t.Fatalf("%d acts guarded by Check alone were not backed; the first: %s", len(g.bad), g.bad[0])
				}
				if len(g.acts) < 2 {
					t.Fatalf("acts guarded by Check alone, by holder: %v; want both members'", g.acts)
				}
			})
		})
	}
}
