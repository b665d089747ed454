package partition_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/partition"
)

// claims records when each member's terms began, by partition.
type claims struct {
	mu sync.Mutex
	at map[string][]time.Time // "holder partition" → starts
}

func (c *claims) add(holder, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at[holder+" "+name] = append(c.at[holder+" "+name], time.Now())
}

func (c *claims) first(holder, name string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.at[holder+" "+name]; len(s) > 0 {
		return s[0], true
	}
	return time.Time{}, false
}

// TestLeaveWaitsForOverrunningFunction: member a leaves (its Run's context
// ends) while one of its partition functions ignores its context and runs
// past the term's deadline. a stays in the group, and its partitions out
// of b's reach, until the function returns, when a leaves and b takes them
// at once; or, if the function runs on past a's lease, which a no longer
// renews, until that lease lapses on the coordinator, and not before.
func TestLeaveWaitsForOverrunningFunction(t *testing.T) {
	for _, tc := range []struct {
		name    string
		overrun time.Duration // past the term's deadline
		lapses  bool          // the lease ends before the function returns
	}{
		{"returns before the lease lapses", 500 * time.Millisecond, false},
		{"runs past the lease", 3 * time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { leaveRun(t, tc.overrun, tc.lapses) })
		})
	}
}

func leaveRun(t *testing.T, overrun time.Duration, lapses bool) {
	c := newCluster(t, 3)
	defer c.close()
	c.cfg.Margin = time.Second // 1s between the deadline and the lease's end (TTL 3s)
	var (
		cl       = &claims{at: map[string][]time.Time{}}
		leaving  atomic.Bool
		slow     atomic.Value // the name of the partition whose function overruns
		slowTerm atomic.Pointer[tenure.Term]
		returned = make(chan time.Time, 1)
	)
	c.fn = func(ctx context.Context, p partition.Partition, term *tenure.Term) error {
		cl.add(term.Grant().Holder, p.Name)
		<-ctx.Done()
		if leaving.Load() && slow.Load() == p.Name {
			slowTerm.Store(term)
			time.Sleep(time.Until(term.Deadline()) + overrun) // ignores ctx
			returned <- time.Now()
		}
		return nil
	}
	c.start("a")
	a := c.nodes["a"]
	c.await("a owns every partition", 5*time.Second, func() bool { return len(a.g.Snapshot().Owned) == 3 })
	c.start("b")
	c.await("b gets its share", 5*time.Second, func() bool {
		return len(c.nodes["b"].g.Snapshot().Owned) == 1 && len(a.g.Snapshot().Owned) == 2
	})
	owned := a.g.Snapshot().Owned
	slowName, drained := owned[0].Partition.Name, owned[1].Partition.Name
	slow.Store(slowName)
	leaving.Store(true)
	a.cancel() // a leaves; c.stop would wait for its Run

	end := <-returned
	term := slowTerm.Load()
	leaseEnd := term.Grant().Sent.Time().Add(term.Grant().TTL) // no latency: applied as sent
	c.await("b takes the overrun partition", 2*c.cfg.TTL, func() bool { _, ok := cl.first("b#1", slowName); return ok })
	took, _ := cl.first("b#1", slowName)
	switch {
	case took.Before(leaseEnd) && took.Before(end):
		t.Errorf("b claimed partition %s %s before a's function for it returned, and %s before a's lease ended; want neither",
			slowName, end.Sub(took), leaseEnd.Sub(took))
	case !lapses && took.Sub(end) > 500*time.Millisecond:
		t.Errorf("b claimed partition %s %s after a's function for it returned; want at once (≤ 500ms)", slowName, took.Sub(end))
	case lapses && took.After(end):
		t.Errorf("b claimed partition %s only after a's function for it returned; want when a's lease lapsed (%s before)", slowName, took.Sub(leaseEnd))
	}
	c.await("b takes the drained partition", time.Second, func() bool { _, ok := cl.first("b#1", drained); return ok })
	if at, _ := cl.first("b#1", drained); at.Sub(took) > 500*time.Millisecond {
		t.Errorf("b took the partition whose function returned at once %s after the overrun one; want with it (≤ 500ms)", at.Sub(took))
	}
	if err := term.Check(); !errors.Is(err, tenure.ErrNotLeader) {
		t.Errorf("the overrunning function's term Check() = %v; want ErrNotLeader (past its deadline)", err)
	}
	c.stop("a")
}
