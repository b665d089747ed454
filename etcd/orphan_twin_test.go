package etcd_test

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/termcheck"
	"github.com/tenure-dev/tenure/partition"
)

// TestGroupOrphanReleaseTwin (adversary, real etcd) tries to make a
// member's release of orphans (partitions the table lists under its ID
// that it does not run) free a partition some process runs: a and b share
// 4 partitions; a second process of a's identity (same Holder and
// Instance, its own client and membership) joins while a lives; claims
// are applied late, by a third client, for random live memberships on
// random partitions (tokens their members never saw); b leaves and joins
// again, so partitions are handed over while their functions, slow to
// stop, act for up to 300ms past their context. termcheck judges every
// act: no other term of its partition may pass its Check (whichever
// process runs it), and no token may be run twice. Once the late claims
// stop and the twin has left, every partition must be run again.
func TestGroupOrphanReleaseTwin(t *testing.T) {
	t.Parallel()
	eps := startEtcd(t)
	l := termcheck.New()
	fn := func(who string) partition.Func {
		return func(ctx context.Context, p partition.Partition, term *tenure.Term) error {
			defer l.Run(p.Key, who, term)()
			var stopAt time.Time
			for {
				if ctx.Err() != nil {
					if stopAt.IsZero() {
						stopAt = time.Now().Add(time.Duration(rand.IntN(300)) * time.Millisecond)
					}
					if time.Now().After(stopAt) {
						return nil
					}
				}
				if !l.Act(p.Key, who, term) {
					return nil
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	type member struct {
		g    *partition.Group
		stop context.CancelFunc
		done chan struct{}
	}
	start := func(who, holder string) *member {
		cfg := partition.DefaultConfig()
		cfg.Key, cfg.Partitions, cfg.Holder, cfg.Instance = "jobs", 4, holder, "1"
		cfg.TTL, cfg.Margin, cfg.RequestTimeout = 2*time.Second, 200*time.Millisecond, time.Second
		cfg.RenewInterval, cfg.RetryPeriod, cfg.Debounce = 250*time.Millisecond, 100*time.Millisecond, 500*time.Millisecond
		cfg.Logger = slog.New(slog.DiscardHandler)
		g, err := partition.New(newCoordinator(t, newClient(t, eps)), cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		m := &member{g: g, stop: cancel, done: make(chan struct{})}
		go func() { defer close(m.done); _ = g.Run(ctx, fn(who)) }()
		return m
	}
	stop := func(m *member) { m.stop(); <-m.done }
	running := func() int {
		n := 0
		for _, name := range partition.Names(4) {
			if l.Live("jobs/" + name) {
				n++
			}
		}
		return n
	}
	await := func(what string, d time.Duration, cond func() bool) {
		t.Helper()
		for end := time.Now().Add(d); !cond(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("%s: not within %s", what, d)
			}
		}
	}
	a, b := start("a", "a"), start("b", "b")
	defer func() { stop(a); stop(b) }()
	await("every partition run", 10*time.Second, func() bool { return running() == 4 })
	twin := start("a-twin", "a")
	late := newCoordinator(t, newClient(t, eps))
	rng := rand.New(rand.NewPCG(1, 2))
	names := partition.Names(4)
	for i := range 30 {
		if i == 10 || i == 20 {
			stop(b)
			b = start("b", "b")
		}
		ms, err := late.GroupMembers(ctx(t), "jobs")
		if err != nil || len(ms) == 0 {
			t.Fatalf("GroupMembers = %v, %v", ms, err)
		}
		m := ms[rng.IntN(len(ms))]
		j := rng.IntN(4)
		pick := []string{names[j], names[(j+1+rng.IntN(3))%4]} // two apart: etcd refuses a key twice in one txn
		if _, err := late.ClaimPartitions(ctx(t), m, pick); err != nil {
			t.Fatalf("late claim for %s = %v", m, err)
		}
		time.Sleep(time.Duration(50+rng.IntN(250)) * time.Millisecond)
	}
	stop(twin)
	await("every partition run again after the late claims", 20*time.Second, func() bool { return running() == 4 })
	l.Verify(t)
	t.Logf("%d acts checked", l.Acts())
}
