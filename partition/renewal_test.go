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
	"github.com/tenure-dev/tenure/internal/history"
	"github.com/tenure-dev/tenure/memory"
	"github.com/tenure-dev/tenure/partition"
)

// hangingLink is a member's link to the memory coordinator on which, once
// hang is set, claims, releases and reads of the membership hang until
// their context ends, while renewals and checks are answered at once. It
// records when each membership renewal was sent.
type hangingLink struct {
	*memory.Coordinator
	hang atomic.Bool
	hung atomic.Int64 // calls that hung

	mu      sync.Mutex
	renewed []time.Time
}

func (l *hangingLink) wait(ctx context.Context, what string) error {
	if !l.hang.Load() {
		return nil
	}
	l.hung.Add(1)
	<-ctx.Done()
	return fmt.Errorf("%s: %w", what, ctx.Err())
}

func (l *hangingLink) ClaimPartitions(ctx context.Context, m partition.Member, names []string) ([]partition.ClaimResult, error) {
	if err := l.wait(ctx, "claim"); err != nil {
		return nil, err
	}
	return l.Coordinator.ClaimPartitions(ctx, m, names)
}

func (l *hangingLink) ReleasePartitions(ctx context.Context, m partition.Member, gs []tenure.Grant) error {
	if err := l.wait(ctx, "release"); err != nil {
		return err
	}
	return l.Coordinator.ReleasePartitions(ctx, m, gs)
}

func (l *hangingLink) GroupMembers(ctx context.Context, group string) ([]partition.Member, error) {
	if err := l.wait(ctx, "read of the members"); err != nil {
		return nil, err
	}
	return l.Coordinator.GroupMembers(ctx, group)
}

func (l *hangingLink) RenewMember(ctx context.Context, m partition.Member) (partition.Member, error) {
	l.mu.Lock()
	l.renewed = append(l.renewed, time.Now())
	l.mu.Unlock()
	return l.Coordinator.RenewMember(ctx, m)
}

func (l *hangingLink) renewals() []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Time(nil), l.renewed...)
}

// TestRenewalsDoNotWaitForPartitionWork: member a's claims, releases and
// reads of the membership hang for a request timeout each, 4s (a
// coordinator too loaded to answer them, with a generous timeout), while
// its renewals and checks are answered at once. Its membership renewals
// must keep their schedule, one renewal interval apart, and the partitions
// it runs must keep running: renewals run on their own, never queued
// behind a claim, a release, a read or the step that makes them. Renewed
// from the step, after its claims, renewals went out 4s apart, past the
// safe lease (2.67s), and a's terms ended.
func TestRenewalsDoNotWaitForPartitionWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 8)                  // TTL 3s: renew every 1s
		c.cfg.RequestTimeout = 4 * time.Second // each claim, release or read hangs 4s
		defer c.close()
		link := &hangingLink{Coordinator: c.coord}
		c.wrap = map[string]partition.Coordinator{"a": link}
		c.start("a")
		c.start("b")
		c.await("the members settle", 10*time.Second, c.settled)
		before := c.nodes["a"].g.Snapshot().Owned
		link.hang.Store(true)
		from := len(link.renewals())
		c.stop("b") // a has b's partitions to claim: its reads and claims hang
		for range 60 {
			time.Sleep(100 * time.Millisecond)
			if o, ended := c.rec.ended(before); ended {
				c.dump()
				t.Fatalf("a's term on partition %s (token %d) ended while its claims, releases and reads hung and its renewals were answered at once", o.Partition.Name, o.Token)
			}
		}
		if link.hung.Load() == 0 {
			t.Fatalf("no claim, release or read of a hung in the 6s after b left; the test did not test anything")
		}
		sent := link.renewals()[from:]
		every := c.renewInterval()
		if len(sent) < 5 {
			t.Fatalf("a sent %d membership renewals in the 6s its claims and reads hung; want at least 5, one every %s", len(sent), every)
		}
		for i := 1; i < len(sent); i++ {
			if gap := sent[i].Sub(sent[i-1]); gap > every {
				t.Errorf("a's membership renewal %d was sent %s after the one before while its claims and reads hung; want at most the renewal interval, %s", i, gap, every)
			}
		}
		link.hang.Store(false)
		c.await("a runs every partition", 3*c.cfg.TTL, c.settled)
		c.check()
	})
}

// ended reports whether the term of one of owned has ended, and which.
func (r *recorder) ended(owned []partition.Owned) (partition.Owned, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range owned {
		for _, ev := range r.events {
			if ev.Kind == history.KindEnd && ev.Partition == o.Partition.Name && ev.Token == o.Token {
				return o, true
			}
		}
	}
	return partition.Owned{}, false
}

// checkHangingLink is hangingLink on which, once hang is set, checks of
// the partitions owned hang until their context ends as well.
type checkHangingLink struct{ *hangingLink }

func (l checkHangingLink) CheckPartitions(ctx context.Context, m partition.Member, gs []tenure.Grant) ([]tenure.Grant, error) {
	if err := l.wait(ctx, "check"); err != nil {
		return nil, err
	}
	return l.Coordinator.CheckPartitions(ctx, m, gs)
}

// TestRenewalsDoNotWaitForChecks: member a's checks of the partitions it
// owns hang until their context ends. Its terms may not be extended (a
// partition freed by hand would go unnoticed), but its membership renewals
// must keep their schedule: a check is bounded by the next renewal's due
// time. Sent after the check, renewals went out a request timeout plus a
// retry period apart.
func TestRenewalsDoNotWaitForChecks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 8) // TTL 3s: renew every 1s, request timeout 1s
		defer c.close()
		link := checkHangingLink{&hangingLink{Coordinator: c.coord}}
		c.wrap = map[string]partition.Coordinator{"a": link}
		c.start("a")
		c.await("a runs every partition", 10*time.Second, c.settled)
		link.hang.Store(true)
		from := len(link.renewals())
		time.Sleep(6 * time.Second)
		sent := link.renewals()[from:]
		every := c.renewInterval()
		if len(sent) < 5 {
			t.Fatalf("a sent %d membership renewals in the 6s its checks hung; want at least 5, one every %s", len(sent), every)
		}
		for i := 1; i < len(sent); i++ {
			if gap := sent[i].Sub(sent[i-1]); gap > every {
				t.Errorf("a's membership renewal %d was sent %s after the one before while its checks hung; want at most the renewal interval, %s", i, gap, every)
			}
		}
		link.hang.Store(false)
		c.await("a runs every partition again", 3*c.cfg.TTL, c.settled)
		c.check()
	})
}
