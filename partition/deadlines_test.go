package partition_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure/internal/timing"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/memory"
	"github.com/tenure-dev/tenure/partition"
)

// partitionOracle is a partition function that acts every 5ms (and right
// before its deadline) while its term's Check passes, and checks each act against the memory
// coordinator at that instant: the partition must be owned, with the
// term's token, by the term's holder, whose membership is live (for at any
// other instant another member could claim it).
type partitionOracle struct {
	c     *cluster
	mu    sync.Mutex
	acts  map[string]int // by holder
	bad   []string
	terms int
}

func (o *partitionOracle) fn(ctx context.Context, p partition.Partition, t *tenure.Term) error {
	o.mu.Lock()
	o.terms++
	o.mu.Unlock()
	for ctx.Err() == nil && t.Check() == nil {
		gs, err := o.c.coord.GroupPartitions(context.Background(), o.c.cfg.Key)
		owner := ""
		var token uint64
		for _, g := range gs {
			if g.Key == p.Key {
				owner, token = g.Holder, g.Token
			}
		}
		o.mu.Lock()
		o.acts[t.Grant().Holder]++
		switch {
		case err != nil:
			o.bad = append(o.bad, fmt.Sprintf("GroupPartitions() = %v", err))
		case owner != t.Grant().Holder || token != t.Token():
			o.bad = append(o.bad, fmt.Sprintf("%s acted on %s with token %d (deadline in %s) while the coordinator had it owned by %q with token %d",
				t.Grant().Holder, p.Key, t.Token(), t.Remaining(), owner, token))
		}
		o.mu.Unlock()
		next := 5 * time.Millisecond
		if d := t.Remaining(); d > time.Nanosecond && d-time.Nanosecond < next {
			next = d - time.Nanosecond // act once more right before the deadline
		}
		select {
		case <-ctx.Done():
		case <-time.After(next):
		}
	}
	return nil
}

// cutAfterRenewal is a member's link to the memory coordinator that, once
// armed, blocks the member's requests right after a membership renewal was
// applied: its reply (slow, when the member's replies are) still arrives,
// and the runner extends its terms with it, but nothing after it reaches
// the coordinator.
type cutAfterRenewal struct {
	*memory.Coordinator
	holder string
	armed  atomic.Bool
}

func (l *cutAfterRenewal) RenewMember(ctx context.Context, m partition.Member) (partition.Member, error) {
	if l.armed.CompareAndSwap(true, false) {
		time.AfterFunc(time.Millisecond, func() { l.Coordinator.Block(l.holder) }) // applied by then; its reply is on its way
	}
	return l.Coordinator.RenewMember(ctx, m)
}

func (o *partitionOracle) violations() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.bad...)
}

// TestPartitionDeadlines: members a and b share 4 partitions; 2s
// in, one fault hits a's link (or the coordinator's clock) for 4s. Every
// act of every partition function is checked against the coordinator; the
// chaos checkers judge the terms. Beyond the drift and jump allowances the
// act check must fail, showing it can.
func TestPartitionDeadlines(t *testing.T) {
	for _, tc := range []struct {
		name      string
		margin    time.Duration // Config.Margin; 300ms when zero
		fault     func(c *cluster)
		violation bool
		cut       bool // a's link is a cutAfterRenewal, armed when the fault begins
	}{
		{name: "renewal replies 2s late", fault: func(c *cluster) { c.coord.SetLatency("a", 0, 2*time.Second) }},
		{name: "requests and replies 1.4s late", fault: func(c *cluster) { c.coord.SetLatency("a", 1400*time.Millisecond, 1400*time.Millisecond) }},
		{name: "replies 900ms late, then requests lost", fault: func(c *cluster) {
			c.coord.SetLatency("a", 0, 900*time.Millisecond)
			time.Sleep(1500 * time.Millisecond) // a renewal answered late
			c.coord.Block("a")
		}},
		{name: "replies 600ms late, requests lost after a renewal", cut: true, fault: func(c *cluster) {
			c.coord.SetLatency("a", 0, 600*time.Millisecond)
			c.wrap["a"].(*cutAfterRenewal).armed.Store(true)
		}},
		{name: "replies lost", fault: func(c *cluster) { c.coord.DropReplies("a", true) }},
		{name: "requests lost", fault: func(c *cluster) { c.coord.Block("a") }},
		{name: "coordinator fast at the drift bound, requests lost, least margin", margin: timing.MinMargin, fault: func(c *cluster) {
			c.coord.SetClockRate(1 / (1 - 0.01))
			c.coord.Block("a")
		}},
		// 3% beyond: the lease ends 86ms early, 36ms past what the margin covers.
		{name: "coordinator fast beyond the drift bound, requests lost, least margin", margin: timing.MinMargin, violation: true, fault: func(c *cluster) {
			c.coord.SetClockRate(1.03 / (1 - 0.01))
			c.coord.Block("a")
		}},
		{name: "coordinator clock jumps 320ms, requests lost", fault: func(c *cluster) {
			c.coord.Block("a")
			c.coord.JumpClock(320 * time.Millisecond)
		}},
		{name: "coordinator clock jumps 400ms, requests lost", violation: true, fault: func(c *cluster) {
			c.coord.Block("a")
			c.coord.JumpClock(400 * time.Millisecond)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newCluster(t, 4)
				defer c.close()
				if tc.margin != 0 {
					c.cfg.Margin = tc.margin
				}
				o := &partitionOracle{c: c, acts: map[string]int{}}
				c.fn = o.fn
				if tc.cut {
					c.wrap = map[string]partition.Coordinator{"a": &cutAfterRenewal{Coordinator: c.coord, holder: "a"}}
				}
				c.start("a")
				c.start("b")
				c.await("a and b share the partitions", 5*time.Second, c.settled)
				time.Sleep(2 * time.Second)
				tc.fault(c)
				time.Sleep(4 * time.Second)
				c.coord.HealAll()
				c.coord.SetClockRate(1)
				c.await("settled again after the fault", 10*time.Second, c.settled)
				if tc.violation {
					c.close()
					if len(o.violations()) == 0 {
						t.Fatalf("no act outside its lease found beyond the allowance; the check cannot fail (acts %v)", o.acts)
					}
					return
				}
				c.check()
				if v := o.violations(); len(v) > 0 {
					if len(v) > 10 {
						v = append(v[:10], fmt.Sprintf("… and %d more", len(v)-10))
					}
					t.Fatalf("%d acts unbacked by the coordinator:\n  %s", len(o.violations()), strings.Join(v, "\n  "))
				}
				if o.acts["a#1"] == 0 || o.acts["b#1"] == 0 || o.terms < 4 {
					t.Fatalf("acts %v in %d terms; want both members to work", o.acts, o.terms)
				}
			})
		})
	}
}
