package etcd_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/termcheck"
	"github.com/tenure-dev/tenure/partition"
)

// TestGroupLateClaimFreed (a regression test of an adversary's finding,
// liveness): member a runs both partitions of a group; a claim of each by
// a, whose call returned an error, is applied afterwards (forwarded late by
// another etcd member, over another connection of a's client: here a
// second client claiming for a's membership), granting them again on a's
// lease with tokens a never saw. etcd's CheckPartitions judges by the
// lease, so a runs on. When b joins, a hands one partition over and
// releases the grant it ran, which frees nothing (the token differs); a
// then finds, at a read of the table, that partition listed as its own but
// not run, and releases it by the listed token. b must run it within a few
// table reads of a (without that release it stays a's, run by nobody and
// refused to b, for as long as a lives), and no token is run by two
// members.
func TestGroupLateClaimFreed(t *testing.T) {
	t.Parallel()
	eps := startEtcd(t)
	var mu sync.Mutex
	running := map[string]string{} // partition → who runs it now
	l := termcheck.New()
	fn := func(who string) partition.Func {
		return func(ctx context.Context, p partition.Partition, term *tenure.Term) error {
			defer l.Run(p.Key, who, term)()
			mu.Lock()
			running[p.Name] = who
			mu.Unlock()
			<-ctx.Done()
			mu.Lock()
			if running[p.Name] == who {
				delete(running, p.Name)
			}
			mu.Unlock()
			return nil
		}
	}
	runs := func(who string, names ...string) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			for _, n := range names {
				if running[n] != who {
					return false
				}
			}
			return true
		}
	}
	await := func(what string, d time.Duration, cond func() bool) {
		t.Helper()
		for end := time.Now().Add(d); !cond(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(end) {
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("%s: not within %s; running %v", what, d, running)
			}
		}
	}
	c := newCoordinator(t, newClient(t, eps))
	var wg sync.WaitGroup
	run, stop := context.WithCancel(context.Background())
	defer func() { stop(); wg.Wait() }()
	member := func(who string) {
		cfg := partition.DefaultConfig()
		cfg.Key, cfg.Partitions, cfg.Holder, cfg.Instance = "jobs", 2, who, "1"
		cfg.TTL, cfg.Margin, cfg.RequestTimeout = 2*time.Second, 200*time.Millisecond, time.Second
		cfg.RenewInterval, cfg.RetryPeriod = 250*time.Millisecond, 100*time.Millisecond // table reads every 0.75 s to 3.75 s
		cfg.Logger = slog.New(slog.DiscardHandler)
		g, err := partition.New(c, cfg)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { _ = g.Run(run, fn(who)) })
	}
	member("a")
	await("a runs both partitions", 10*time.Second, runs("a", "0", "1"))

	ms, err := c.GroupMembers(ctx(t), "jobs")
	if err != nil || len(ms) != 1 {
		t.Fatalf("GroupMembers = %v, %v; want a alone", ms, err)
	}
	late := newCoordinator(t, newClient(t, eps))
	mustClaim(t, late, ms[0], "0", "1") // the late claims: tokens a never saw

	member("b")
	await("b runs a partition", 15*time.Second, func() bool { return runs("b", "0")() || runs("b", "1")() })
	for _, v := range l.Violations() {
		t.Error(v)
	}
}
