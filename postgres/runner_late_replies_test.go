package postgres_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/tcpproxy"
	"github.com/tenure-dev/tenure/internal/termcheck"
	"github.com/tenure-dev/tenure/partition"

	"github.com/tenure-dev/tenure"
)

// TestRunnerLateRepliesAndRequests runs two members of a 4-partition
// group, a through a fault proxy, b directly, and an Elector x for
// partition 0's key that leads 300ms whenever it finds the key free
// (single-key Acquires racing the claims). Eight times, b joins, takes its
// share and leaves, and as a claims b's partitions a's replies are delayed
// about as long as a claim may take (claims applied whose outcome a cannot
// know: doubtful partitions, claimed again and so superseded); then a's
// link has its replies held, its requests held (releases and claims that
// arrive late), or latency beyond the request timeout, for up to 2.5 s of
// a 2 s TTL, so that a's membership expires now and then and a joins
// again. termcheck judges every act (a Term.Check that passed) of every
// term: the test fails when a term passes Check after another term of its
// partition with a greater token did, or while another running term of it
// passes Check (two holders acting at once), or when a token is run twice
// or by two members. It passed when written: kept as a regression test.
func TestRunnerLateRepliesAndRequests(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	proxy, viaProxy := proxied(t, dsn)
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
	member := func(ctx context.Context, who, instance, dsn string) {
		cfg := partition.DefaultConfig()
		cfg.Key, cfg.Partitions, cfg.Holder, cfg.Instance = "jobs", 4, who, instance
		cfg.TTL, cfg.Margin, cfg.RequestTimeout = 2*time.Second, 200*time.Millisecond, 300*time.Millisecond
		cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
		g, err := partition.New(open(t, dsn), cfg)
		if err != nil {
			t.Error(err)
			return
		}
		wg.Go(func() { _ = g.Run(ctx, fn(who)) })
	}
	member(run, "a", "1", viaProxy)
	// x, an Elector for partition 0's key, leads 300ms at a time whenever
	// it finds the key free: a single-key Acquire racing the claims.
	ecfg := tenure.DefaultConfig()
	ecfg.Key, ecfg.Holder, ecfg.Instance = "jobs/0", "x", "1"
	ecfg.TTL, ecfg.Margin = 2*time.Second, 200*time.Millisecond
	e, err := tenure.NewElector(open(t, dsn), ecfg)
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
	rng := rand.New(rand.NewPCG(3, 7))
	var faults []string
	for cycle := range 8 {
		// b joins, takes its share, and leaves: a claims b's partitions
		// while its link misbehaves.
		bctx, bstop := context.WithCancel(run)
		member(bctx, "b", fmt.Sprint(cycle), dsn)
		time.Sleep(1500 * time.Millisecond)
		// Replies slow enough that a claim (five round trips) outlasts
		// the 300ms request timeout about when its COMMIT is sent: its
		// outcome unknown, applied or not.
		lat := time.Duration(50+rng.IntN(40)) * time.Millisecond
		proxy.SetLatency(tcpproxy.Down, lat)
		bstop()
		time.Sleep(time.Second)
		proxy.SetLatency(tcpproxy.Down, 0)
		faults = append(faults, fmt.Sprintf("b left, replies delayed %s", lat))
		d := time.Duration(200+rng.IntN(2300)) * time.Millisecond
		switch rng.IntN(3) {
		case 0:
			proxy.Hold(tcpproxy.Down)
			time.Sleep(d)
			proxy.Release(tcpproxy.Down)
			faults = append(faults, fmt.Sprintf("replies held %s", d))
		case 1:
			proxy.Hold(tcpproxy.Up)
			time.Sleep(d)
			proxy.Release(tcpproxy.Up)
			faults = append(faults, fmt.Sprintf("requests held %s", d))
		default:
			proxy.SetLatency(tcpproxy.Up, d/2)
			time.Sleep(d)
			proxy.SetLatency(tcpproxy.Up, 0)
			faults = append(faults, fmt.Sprintf("latency %s for %s", d/2, d))
		}
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
	t.Logf("%d terms (x's: %d), %d acts over 4 partitions, %d claims with an outcome unknown (claimed again); faults on a's link: %v", terms, l.Terms("x"), total, doubtful, faults)
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
