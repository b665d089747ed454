package partition_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/refusaltest"
	"github.com/tenure-dev/tenure/memory"
	"github.com/tenure-dev/tenure/partition"
)

// refusingGroup is a memory coordinator whose JoinGroup, RenewMember and
// ClaimPartitions fail as mode says before they reach it, as a backend's
// do for a role that may not write (refuses) or a server that does not
// answer (transient).
type refusingGroup struct {
	*memory.Coordinator
	refusaltest.Mode
}

func (c *refusingGroup) JoinGroup(ctx context.Context, group, id string, ttl time.Duration, partitions int) (partition.Member, error) {
	if err := c.Fail("join"); err != nil {
		return partition.Member{}, err
	}
	return c.Coordinator.JoinGroup(ctx, group, id, ttl, partitions)
}

func (c *refusingGroup) RenewMember(ctx context.Context, m partition.Member) (partition.Member, error) {
	if err := c.Fail("renew member"); err != nil {
		return partition.Member{}, err
	}
	return c.Coordinator.RenewMember(ctx, m)
}

func (c *refusingGroup) ClaimPartitions(ctx context.Context, m partition.Member, names []string) ([]partition.ClaimResult, error) {
	if err := c.Fail("claim"); err != nil {
		return nil, err
	}
	return c.Coordinator.ClaimPartitions(ctx, m, names)
}

// awaitGroupRun waits, in the bubble's virtual time, at most limit for
// member name's Run to return, and checks that its error matches
// tenure.ErrRefused and still lets errors.As find the coordinator's own.
func awaitGroupRun(t *testing.T, c *cluster, name string, limit time.Duration) {
	t.Helper()
	n := c.nodes[name]
	select {
	case err := <-n.done:
		delete(c.nodes, name)
		var re *refusaltest.RoleError
		if !errors.Is(err, tenure.ErrRefused) || !errors.As(err, &re) {
			t.Fatalf("Run(%s) = %v; want an error matching tenure.ErrRefused and wrapping the coordinator's *refusaltest.RoleError", name, err)
		}
	case <-time.After(limit):
		t.Fatalf("Run(%s) still running %s after the coordinator refused for good; want it returned", name, limit)
	}
}

// TestGroupStopsWhenJoinRefused: a member without a logger tries to join
// through a minute of timeouts (retried: Run keeps going), and then
// through a refusal that waiting does not cure: Run returns it at the next
// attempt.
func TestGroupStopsWhenJoinRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 4)
		defer c.close()
		c.cfg.Logger = nil
		rc := &refusingGroup{Coordinator: c.coord}
		rc.Set(refusaltest.Transient)
		c.wrap = map[string]partition.Coordinator{"a": rc}
		c.start("a")
		time.Sleep(time.Minute)
		synctest.Wait()
		select {
		case err := <-c.nodes["a"].done:
			t.Fatalf("Run(a) = %v during timeouts; want it trying on", err)
		default:
		}
		rc.Set(refusaltest.Refuses)
		awaitGroupRun(t, c, "a", 2*c.cfg.EffectiveSyncInterval())
	})
}

// TestGroupStopsWhenRenewalRefused: a member that owns every partition
// has its renewals and claims time out for a moment (retried: its terms
// live on), then refused for good: every term ends (each function's ctx
// cancelled) and Run returns the refusal once they have returned.
func TestGroupStopsWhenRenewalRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 4)
		defer c.close()
		rc := &refusingGroup{Coordinator: c.coord}
		c.wrap = map[string]partition.Coordinator{"a": rc}
		var running atomic.Int32
		c.fn = func(ctx context.Context, p partition.Partition, term *tenure.Term) error {
			running.Add(1)
			defer running.Add(-1)
			<-ctx.Done()
			return nil
		}
		c.start("a")
		c.await("a owns every partition", 10*time.Second, func() bool { return running.Load() == 4 })
		rc.Set(refusaltest.Transient)
		time.Sleep(1500 * time.Millisecond) // a renewal (every 1s) times out
		rc.Set(refusaltest.Answers)
		time.Sleep(time.Second) // the retry succeeds
		if n := running.Load(); n != 4 {
			t.Fatalf("%d partitions run after a renewal timed out and was retried; want 4", n)
		}
		rc.Set(refusaltest.Refuses)
		awaitGroupRun(t, c, "a", 2*time.Second) // the next renewal
		if n := running.Load(); n != 0 {
			t.Errorf("%d partition functions still running after Run returned; want 0", n)
		}
	})
}
