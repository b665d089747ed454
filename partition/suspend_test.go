package partition_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure/internal/timing"

	"github.com/tenure-dev/tenure/partition"

	"github.com/tenure-dev/tenure/internal/boottime"
	"github.com/tenure-dev/tenure/memory"
)

// suspendingLink is one member's link to the memory coordinator. When
// armed, it suspends the member's host once: inside a membership renewal
// (after the coordinator extended the lease, before the reply is read), or
// right before a claim is sent, so after the renewal that last extended
// the lease. The coordinator, on another host, lives through the suspend
// (its clock jumps by it); on the suspended host Go's monotonic clock
// stands still and the boot clock moves on. (The boot clock is the
// process's: the other members of the test, in the same process, are
// suspended too, and their own deadlines keep them safe.) The member is cut
// off from the coordinator right after, so its lease runs out and the
// other members take its partitions over.
type suspendingLink struct {
	*memory.Coordinator
	suspend func(time.Duration) // the host's boot clock: see boottime.NewSuspendable
	holder  string              // whose link it is
	inClaim bool                // suspend before a claim, not inside a renewal
	d       time.Duration
	armed   atomic.Bool
	at      atomic.Int64 // boot clock reading on resume
}

// sleep suspends the host for d.
func (l *suspendingLink) sleep() {
	l.suspend(l.d)
	l.Coordinator.JumpClock(l.d)
	l.at.Store(int64(boottime.Now()))
}

func (l *suspendingLink) RenewMember(ctx context.Context, m partition.Member) (partition.Member, error) {
	r, err := l.Coordinator.RenewMember(ctx, m)
	if !l.inClaim && err == nil && l.armed.CompareAndSwap(true, false) {
		l.sleep()
		l.Coordinator.Partition(l.holder)
	}
	return r, err
}

func (l *suspendingLink) ClaimPartitions(ctx context.Context, m partition.Member, names []string) ([]partition.ClaimResult, error) {
	if l.inClaim && l.armed.CompareAndSwap(true, false) {
		l.sleep()
		defer l.Coordinator.Partition(l.holder)
	}
	return l.Coordinator.ClaimPartitions(ctx, m, names)
}

// TestGroupSuspendDuringRenewal: member a's host is suspended for 5s (TTL
// 10s) between a membership renewal's send and its reply, then cut off.
// Its terms must end by the renewal's send plus the safe lease on the boot
// clock, before its lease ends and b takes its partitions over; counted
// from the send on Go's monotonic clock alone, they would end about 14s
// after it, 4s into b's terms.
func TestGroupSuspendDuringRenewal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { suspendRun(t, false) })
}

// TestGroupSuspendBetweenRenewalAndClaim: member a's host is suspended for
// 5s after a renewal, right before it claims the partitions of a member
// that left, then cut off. The terms it starts must end by that renewal's
// send plus the safe lease on the boot clock (or not start at all), before
// its lease ends and b takes the partitions over.
func TestGroupSuspendBetweenRenewalAndClaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { suspendRun(t, true) })
}

func suspendRun(t *testing.T, inClaim bool) {
	c := newCluster(t, 12)
	c.cfg.TTL, c.cfg.Margin = 10*time.Second, time.Second
	link := &suspendingLink{Coordinator: c.coord, suspend: c.suspend, holder: "a", inClaim: inClaim, d: 5 * time.Second}
	c.wrap = map[string]partition.Coordinator{"a": link}
	members := []string{"a", "b"}
	if inClaim {
		members = append(members, "c")
	}
	for _, n := range members {
		c.start(n)
	}
	c.await("the members settle", 10*time.Second, c.settled)
	link.armed.Store(true)
	if inClaim {
		c.stop("c") // a and b claim c's partitions
	}
	c.await("the suspend", 2*c.cfg.TTL, func() bool { return !link.armed.Load() })
	c.await("b owns every partition", 3*c.cfg.TTL, func() bool {
		return len(c.nodes["b"].g.Snapshot().Owned) == c.cfg.Partitions
	})
	time.Sleep(c.cfg.TTL) // a's terms end on their own, however late
	c.check()             // no two owners' terms overlap
	resumed := boottime.Instant(link.at.Load())
	across := 0
	for _, s := range c.rec.spans("a#1") {
		g := s.term.Grant()
		dl := g.Sent.Add(timing.SafeLease(g.TTL, c.cfg.MaxDrift, c.cfg.Margin)).Boot()
		if int64(s.end) > dl {
			t.Errorf("a's term %d ended at %s on the boot clock; want by %s, its last send %s plus the safe lease %s",
				g.Token, time.Duration(s.end), time.Duration(dl), time.Duration(g.Sent.Boot()), timing.SafeLease(g.TTL, c.cfg.MaxDrift, c.cfg.Margin))
		}
		if s.end > resumed && (inClaim == (s.start >= resumed)) {
			across++
		}
	}
	if across == 0 {
		t.Errorf("none of a's terms was live after the suspend (started by the claim after it: %v); the test did not test anything", inClaim)
	}
}
