package partition_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/memory"
)

// slowLink is a member's link to the memory coordinator on which, once
// slow is set, claims and reads of the membership and of the partition
// table hang until their request times out, while renewals are answered at
// once. It records when each membership renewal was sent.
type slowLink struct {
	*memory.Coordinator
	slow     atomic.Bool
	inFlight atomic.Int64 // claims and reads hanging now

	mu      sync.Mutex
	renewed []time.Time
}

func (l *slowLink) hang(ctx context.Context, what string) error {
	if !l.slow.Load() {
		return nil
	}
	l.inFlight.Add(1)
	defer l.inFlight.Add(-1)
	<-ctx.Done()
	return fmt.Errorf("%s: %w", what, ctx.Err())
}

func (l *slowLink) ClaimPartitions(ctx context.Context, m tenure.Member, names []string) ([]tenure.ClaimResult, error) {
	if err := l.hang(ctx, "claim"); err != nil {
		return nil, err
	}
	return l.Coordinator.ClaimPartitions(ctx, m, names)
}

func (l *slowLink) GroupMembers(ctx context.Context, group string) ([]tenure.Member, error) {
	if err := l.hang(ctx, "read of the members"); err != nil {
		return nil, err
	}
	return l.Coordinator.GroupMembers(ctx, group)
}

func (l *slowLink) GroupPartitions(ctx context.Context, group string) ([]tenure.Grant, error) {
	if err := l.hang(ctx, "read of the partition table"); err != nil {
		return nil, err
	}
	return l.Coordinator.GroupPartitions(ctx, group)
}

func (l *slowLink) RenewMember(ctx context.Context, m tenure.Member) (tenure.Member, error) {
	l.mu.Lock()
	l.renewed = append(l.renewed, time.Now())
	l.mu.Unlock()
	return l.Coordinator.RenewMember(ctx, m)
}

// TestRenewalsDoNotWaitForClaimsOrReads: member a's claims and reads of the
// membership and of the partition table hang for a request timeout each, 2s
// (a coordinator slow to answer them, as etcd or PostgreSQL is under a
// cold start of many partitions), while its renewals are answered at once.
// Its membership renewals must still be sent on their schedule, one renewal
// interval apart: they run on their own, never queued behind a claim, a
// read or the step that makes them. Renewed from the step, after its
// reads and claims, renewals went out 2s apart, a third of the safe lease
// left when each was sent.
func TestRenewalsDoNotWaitForClaimsOrReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 8)                  // TTL 3s: renew every 1s
		c.cfg.RequestTimeout = 2 * time.Second // each claim or read hangs 2s
		defer c.close()
		link := &slowLink{Coordinator: c.coord}
		c.wrap = map[string]tenure.Coordinator{"a": link}
		c.start("a")
		c.start("b")
		c.await("the members settle", 10*time.Second, c.settled)
		link.slow.Store(true)
		c.stop("b") // a has b's partitions to claim: its claims, and reads, hang
		link.mu.Lock()
		from := len(link.renewed)
		link.mu.Unlock()
		time.Sleep(6 * time.Second)
		if link.inFlight.Load() == 0 {
			t.Fatalf("no claim or read of a hangs 6s after b left")
		}
		link.mu.Lock()
		sent := append([]time.Time(nil), link.renewed[from:]...)
		link.mu.Unlock()
		every := c.renewInterval()
		if len(sent) < 5 {
			t.Fatalf("a sent %d membership renewals in the 6s its claims and reads hung; want at least 5, one every %s", len(sent), every)
		}
		for i := 1; i < len(sent); i++ {
			if gap := sent[i].Sub(sent[i-1]); gap > every {
				t.Errorf("a's membership renewal %d was sent %s after the one before while its claims and reads hung; want at most the renewal interval, %s", i, gap, every)
			}
		}
		link.slow.Store(false)
		c.await("a runs every partition", 3*c.cfg.TTL, c.settled)
		c.check()
	})
}
