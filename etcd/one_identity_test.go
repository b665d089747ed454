package etcd_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/termcheck"
	"github.com/tenure-dev/tenure/partition"

	"github.com/tenure-dev/tenure"
)

// TestAcquireByOwnersIDTakesPartition tries a single-key Acquire
// of a live partition's key by a holder named as the member that owns the
// partition (one process running an Elector and a partition Group under
// one identity, or two processes configured alike). Acquire supersedes a
// holder's own grant; it must not take that for the partition's grant: the
// partition belongs to the member's lease, and the member still runs it
// (CheckPartitions says so until the key is gone). Every other backend
// refuses such an Acquire while the member lives.
func TestAcquireByOwnersIDTakesPartition(t *testing.T) {
	t.Parallel()
	c := newCoordinator(t, newClient(t, startEtcd(t)))
	m, err := c.JoinGroup(ctx(t), "team/jobs", "worker-1", time.Minute, 2)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.ClaimPartitions(ctx(t), m, []string{"0"})
	if err != nil || res[0].Err != nil {
		t.Fatalf("claim = %+v, %v", res, err)
	}
	part := res[0].Grant
	g, err := c.Acquire(ctx(t), "team/jobs/0", "worker-1", time.Minute)
	lost, cerr := c.CheckPartitions(ctx(t), m, []tenure.Grant{part})
	t.Logf("partition grant %+v; Acquire by the same identity = %+v, %v; member's CheckPartitions after: lost %v, %v", part, g, err, lost, cerr)
	var held *tenure.HeldError
	if !errors.As(err, &held) {
		t.Errorf("Acquire(team/jobs/0, worker-1) while member worker-1 (epoch %x) owns partition 0 with token %d = %+v, %v; want a *tenure.HeldError: the single-key holder and the member both hold the partition until the member's next check", m.Epoch, part.Token, g, err)
	}
}

// TestElectorAndGroupOfOneProcess runs, in one process on one Coordinator,
// a partition Group "jobs" and an Elector for key "jobs/0", both of one
// identity (Holder and Instance, as identity.ProcessInstance gives every
// Elector and Group of a process, and which Run accepts: the rule against
// one identity twice is per key for Electors and per group for Groups).
// termcheck judges every act of either side (a Term.Check that passed): no
// term may pass Check after a term with a greater token did, nor while the
// other side's term passes it (both acting at once).
func TestElectorAndGroupOfOneProcess(t *testing.T) {
	t.Parallel()
	c := newCoordinator(t, newClient(t, startEtcd(t)))
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
	t.Logf("%d acts of %d terms (the Elector's: %d)", l.Acts(), l.Terms(""), l.Terms("elector"))
}
