package bench

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-dev/tenure/internal/pgtest"
	"github.com/tenure-dev/tenure/postgres"
)

// seedTTL is the lease of the seed's statements, as the seed writes it.
const seedTTL = 15 * time.Second

// BenchmarkPostgresCoordinator measures the Coordinator beside the seed's raw SQL on
// the same server in the same run:
//
//   - ops: acquire, renew and release cycles on a key per client, at 1 and
//     10 concurrent clients, as tenure bench throughput runs them (see
//     benchOps); reports each side's ops/s (statements: three per cycle),
//     their ratio and its spread over the rounds.
//   - handover: release by the leader → the follower holds the key; the
//     Coordinator's follower waits on Watch (LISTEN/NOTIFY), the seed's
//     follower re-runs the acquisition statement every 5ms; reports p50 and
//     p99 in milliseconds.
func BenchmarkPostgresCoordinator(b *testing.B) {
	srv := pgtest.Need(b, pg.srv, pg.err)
	dsn := srv.NewDatabase(b)
	poolDSN := pgtest.WithParams(dsn, map[string]string{"pool_max_conns": "12"})
	ctx := b.Context()
	c := openPostgres(b, poolDSN)
	pool, err := pgxpool.New(ctx, poolDSN)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	seed := Seed{Pool: pool}
	if err := seed.Setup(ctx, "handover/seed"); err != nil {
		b.Fatal(err)
	}

	for _, clients := range []int{1, 10} {
		b.Run(fmt.Sprintf("ops/clients=%d", clients), func(b *testing.B) {
			benchOps(b, Target{Postgres: dsn}, clients)
		})
	}

	b.Run("handover/tenure", func(b *testing.B) {
		follower := openPostgres(b, poolDSN)
		const key = "handover/tenure"
		wctx, stop := context.WithCancel(ctx)
		defer stop()
		w, err := follower.Watch(wctx, key)
		if err != nil {
			b.Fatal(err)
		}
		var armed atomic.Bool
		got := make(chan time.Time)
		released := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			for ev := range w {
				if ev.Held || !armed.Load() {
					continue
				}
				g, err := follower.Acquire(wctx, key, "follower", 15*time.Second)
				if err != nil {
					continue
				}
				armed.Store(false)
				got <- time.Now()
				_ = follower.Release(wctx, g)
				released <- struct{}{}
			}
		})
		handover(b, func() (func(), error) {
			g, err := c.Acquire(ctx, key, "leader", 15*time.Second)
			if err != nil {
				return nil, err
			}
			return func() { armed.Store(true); _ = c.Release(ctx, g) }, nil
		}, got, released)
		stop()
		wg.Wait()
	})
	b.Run("handover/seed", func(b *testing.B) {
		const key = "handover/seed"
		var armed atomic.Bool
		got := make(chan time.Time)
		released := make(chan struct{})
		var wg sync.WaitGroup
		wctx, stop := context.WithCancel(ctx)
		defer stop()
		wg.Go(func() {
			t := time.NewTicker(5 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-wctx.Done():
					return
				case <-t.C:
				}
				if !armed.Load() {
					continue
				}
				token, ok, err := seed.Acquire(wctx, key, "follower", seedTTL)
				if err != nil || !ok {
					continue
				}
				armed.Store(false)
				got <- time.Now()
				_ = seed.Release(wctx, key, "follower", token)
				released <- struct{}{}
			}
		})
		handover(b, func() (func(), error) {
			token, ok, err := seed.Acquire(ctx, key, "leader", seedTTL)
			if err != nil || !ok {
				return nil, fmt.Errorf("seed acquire: %v, ok %v", err, ok)
			}
			return func() {
				armed.Store(true)
				_ = seed.Release(ctx, key, "leader", token)
			}, nil
		}, got, released)
		stop()
		wg.Wait()
	})
}

// benchOps measures tenure's acquire/renew/release cycles beside the
// seed's with clients clients, as tenure bench throughput does
// (throughputRounds): in rounds of a second each, the two in turns, in the
// reverse order every other round, for -benchtime on each side (at least
// two rounds, an even number). It runs once, whatever b.N: a run is longer
// than -benchtime.
func benchOps(b *testing.B, t Target, clients int) {
	d := 2 * time.Second
	if f := flag.Lookup("test.benchtime"); f != nil {
		if v, err := time.ParseDuration(f.Value.String()); err == nil {
			d = max(v, d)
		}
	}
	rounds := int(d / time.Second)
	rounds += rounds % 2
	tenureOps := tenureCycler("tenure", "bench/ops", t.postgresOpener(postgres.NotifyWatched))
	seedOps := seedCycler(t, "bench/ops/seed")
	o := ThroughputOptions{Target: t, Clients: []int{clients}, Duration: time.Duration(rounds) * time.Second, Rounds: rounds}
	cells, err := throughputRounds(b.Context(), o, []*cycler{tenureOps, seedOps})
	if err != nil {
		b.Fatal(err)
	}
	tc, sc := cells[cellKey(tenureOps, clients)], cells[cellKey(seedOps, clients)]
	tops, sops := float64(3*tc.cycles)/tc.elapsed.Seconds(), float64(3*sc.cycles)/sc.elapsed.Seconds()
	least, most := roundRatios(tc, sc)
	b.ReportMetric(tops, "tenure-ops/s")
	b.ReportMetric(sops, "seed-ops/s")
	b.ReportMetric(ratio(tops, sops), "ratio")
	b.ReportMetric(least, "round-ratio-min")
	b.ReportMetric(most, "round-ratio-max")
	b.ReportMetric(0, "ns/op")
}

// handover measures b.N handovers: lead() acquires for the leader and
// returns the release; the follower sends on got when it holds the key and
// on released once it has let go again.
func handover(b *testing.B, lead func() (func(), error), got <-chan time.Time, released <-chan struct{}) {
	var took []time.Duration
	b.ResetTimer()
	for range b.N {
		release, err := lead()
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		release()
		select {
		case at := <-got:
			took = append(took, at.Sub(start))
		case <-time.After(10 * time.Second):
			b.Fatal("no handover within 10s")
		}
		<-released
	}
	b.StopTimer()
	slices.Sort(took)
	q := func(p float64) float64 {
		return float64(took[min(len(took)-1, int(p*float64(len(took))))]) / float64(time.Millisecond)
	}
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op")
}

// openPostgres opens a Coordinator on dsn, closed when b ends.
func openPostgres(b *testing.B, dsn string) *postgres.Coordinator {
	b.Helper()
	c, err := postgres.Dial(b.Context(), dsn)
	if err != nil {
		b.Fatalf("Open() error = %v", err)
	}
	b.Cleanup(func() {
		if err := c.Close(); err != nil {
			b.Errorf("Close() error = %v", err)
		}
	})
	return c
}
