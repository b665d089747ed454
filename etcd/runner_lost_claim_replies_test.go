package etcd_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/termcheck"
	"github.com/tenure-dev/tenure/partition"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
)

// TestRunnerLostClaimReplies runs two members of a 4-partition group, and
// an Elector x for partition 0's key that leads 300ms whenever it finds
// the key free (single-key Acquires racing the claims): a on a client
// whose Txn replies are dropped after etcd applied them (half of them,
// while the fault is on), b on a plain one. Eight times, b joins, takes
// its share and leaves, and a claims b's partitions with the fault on:
// claims applied whose outcome a cannot know (doubtful partitions, claimed
// again: each re-claim rewrites the key on a's lease, superseding a's
// grant, and etcd's CheckPartitions judges by the lease, not the token),
// and releases a retries. termcheck judges every act (a Term.Check that
// passed) of every term: the test fails when a term passes Check after
// another term of its partition with a greater token did, or while another
// running term of it passes Check (two holders acting at once), or when a
// token is run twice or by two members. It passed when written: kept as a
// regression test.
func TestRunnerLostClaimReplies(t *testing.T) {
	t.Parallel()
	eps := startEtcd(t)
	var drop atomic.Bool
	var dropped atomic.Int64
	lossy := hookedClient(t, eps, rpcHooks{reply: func(method string, _ stamp, _, _ any, err error) error {
		if err == nil && method == rpcTxn && drop.Load() && rand.IntN(2) == 0 {
			dropped.Add(1)
			return errDropped
		}
		return err
	}})
	plain := newClient(t, eps)
	l := termcheck.New()
	fn := func(who string) partition.Func {
		return func(ctx context.Context, p partition.Partition, term *tenure.Term) error {
			defer l.Run(p.Key, who, term)()
			for ctx.Err() == nil {
				l.Act(p.Key, who, term)
				time.Sleep(5 * time.Millisecond)
			}
			return nil
		}
	}
	logs := &lockedBuffer{}
	run, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	member := func(ctx context.Context, who, instance string, cl *clientv3.Client) {
		cfg := partition.DefaultConfig()
		cfg.Key, cfg.Partitions, cfg.Holder, cfg.Instance = "jobs", 4, who, instance
		cfg.TTL, cfg.Margin, cfg.RequestTimeout = 2*time.Second, 200*time.Millisecond, time.Second
		cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
		g, err := partition.New(newCoordinator(t, cl), cfg)
		if err != nil {
			t.Error(err)
			return
		}
		wg.Go(func() { _ = g.Run(ctx, fn(who)) })
	}
	member(run, "a", "1", lossy)
	// x, an Elector for partition 0's key, leads 300ms at a time whenever
	// it finds the key free: a single-key Acquire racing the claims.
	ecfg := tenure.DefaultConfig()
	ecfg.Key, ecfg.Holder, ecfg.Instance = "jobs/0", "x", "1"
	ecfg.TTL, ecfg.Margin = 2*time.Second, 200*time.Millisecond
	e, err := tenure.NewElector(newCoordinator(t, plain), ecfg)
	if err != nil {
		t.Fatal(err)
	}
	wg.Go(func() {
		for run.Err() == nil {
			_ = e.Run(run, func(ctx context.Context, term *tenure.Term) error {
				defer l.Run("jobs/0", "x", term)()
				for end := time.Now().Add(300 * time.Millisecond); ctx.Err() == nil && time.Now().Before(end); {
					l.Act("jobs/0", "x", term)
					time.Sleep(5 * time.Millisecond)
				}
				return nil
			})
			select {
			case <-run.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	})
	for cycle := range 8 {
		// b joins, takes its share, and leaves: a claims b's partitions
		// while its link misbehaves.
		bctx, bstop := context.WithCancel(run)
		member(bctx, "b", fmt.Sprint(cycle), plain)
		time.Sleep(1500 * time.Millisecond)
		drop.Store(true)
		bstop()
		time.Sleep(time.Second)
		drop.Store(false)
		time.Sleep(500 * time.Millisecond)
	}
	time.Sleep(3 * time.Second) // healed: let the group settle
	stop()
	wg.Wait()
	l.Verify(t)
	terms, total := l.Terms(""), l.Acts()
	logs.mu.Lock()
	doubtful := strings.Count(logs.b.String(), "claiming these partitions again")
	logs.mu.Unlock()
	t.Logf("%d terms (x's: %d), %d acts over 4 partitions, %d claims with an outcome unknown (claimed again); %d Txn replies dropped", terms, l.Terms("x"), total, doubtful, dropped.Load())
	if terms <= 4 {
		t.Errorf("only %d terms: the faults moved no partition, the test tested little", terms)
	}
}

// lockedBuffer is a bytes.Buffer safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
