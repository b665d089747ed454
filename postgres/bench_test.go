package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-dev/tenure/internal/pgtest"
)

// The seed's statements, verbatim but for the table name and the renew and
// release statements the seed leaves implicit, for the raw-SQL peer.
const (
	seedTable   = `CREATE TABLE seed_leadership (resource text PRIMARY KEY, holder_id text, fencing_token bigint NOT NULL DEFAULT 0, acquired_at timestamptz, expires_at timestamptz NOT NULL DEFAULT '-infinity')`
	seedAcquire = `UPDATE seed_leadership
SET holder_id = $1, fencing_token = fencing_token + 1,
    acquired_at = CURRENT_TIMESTAMP, expires_at = CURRENT_TIMESTAMP + INTERVAL '15 seconds'
WHERE resource = $2 AND (expires_at < CURRENT_TIMESTAMP OR holder_id = $1)
RETURNING fencing_token, expires_at`
	seedRenew = `UPDATE seed_leadership SET expires_at = CURRENT_TIMESTAMP + INTERVAL '15 seconds'
WHERE resource = $1 AND holder_id = $2 AND fencing_token = $3 AND expires_at > CURRENT_TIMESTAMP`
	seedRelease = `UPDATE seed_leadership SET expires_at = '-infinity'
WHERE resource = $1 AND holder_id = $2 AND fencing_token = $3`
)

// seedPeer runs the seed's statements on a pool of its own.
type seedPeer struct{ pool *pgxpool.Pool }

func (s seedPeer) acquire(ctx context.Context, key, holder string) (uint64, bool, error) {
	var token int64
	var exp time.Time
	err := s.pool.QueryRow(ctx, seedAcquire, holder, key).Scan(&token, &exp)
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return 0, false, nil
		}
		return 0, false, err
	}
	return uint64(token), true, nil
}

// BenchmarkCoordinator measures the Coordinator beside the seed's raw SQL on
// the same server in the same run:
//
//   - ops: acquire, renew and release cycles on a key per client, at 1 and
//     10 concurrent clients; reports ops/s (statements: three per cycle).
//   - handover: release by the leader → the follower holds the key; the
//     Coordinator's follower waits on Watch (LISTEN/NOTIFY), the seed's
//     follower re-runs the acquisition statement every 5ms; reports p50 and
//     p99 in milliseconds.
func BenchmarkCoordinator(b *testing.B) {
	srv := server(b)
	dsn := srv.NewDatabase(b)
	poolDSN := pgtest.WithParams(dsn, map[string]string{"pool_max_conns": "12"}) // room for 10 clients
	ctx := b.Context()
	c := open(b, poolDSN)
	srv.Exec(b, dsn, seedTable)
	pool, err := pgxpool.New(ctx, poolDSN)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	seed := seedPeer{pool}
	for i := range 10 {
		srv.Exec(b, dsn, `INSERT INTO seed_leadership (resource) VALUES ($1)`, fmt.Sprintf("bench/%d", i))
	}

	for _, clients := range []int{1, 10} {
		b.Run(fmt.Sprintf("ops/clients=%d/tenure", clients), func(b *testing.B) {
			runClients(b, clients, func(key, holder string) error {
				g, err := c.Acquire(ctx, key, holder, 15*time.Second)
				if err != nil {
					return err
				}
				if _, err := c.Renew(ctx, g); err != nil {
					return err
				}
				return c.Release(ctx, g)
			})
		})
		b.Run(fmt.Sprintf("ops/clients=%d/seed", clients), func(b *testing.B) {
			runClients(b, clients, func(key, holder string) error {
				token, ok, err := seed.acquire(ctx, key, holder)
				if err != nil || !ok {
					return fmt.Errorf("seed acquire: %v, ok %v", err, ok)
				}
				if _, err := pool.Exec(ctx, seedRenew, key, holder, int64(token)); err != nil {
					return err
				}
				_, err = pool.Exec(ctx, seedRelease, key, holder, int64(token))
				return err
			})
		})
	}

	b.Run("handover/tenure", func(b *testing.B) {
		follower := open(b, poolDSN)
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
		srv.Exec(b, dsn, `INSERT INTO seed_leadership (resource) VALUES ($1) ON CONFLICT DO NOTHING`, key)
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
				token, ok, err := seed.acquire(wctx, key, "follower")
				if err != nil || !ok {
					continue
				}
				armed.Store(false)
				got <- time.Now()
				_, _ = pool.Exec(wctx, seedRelease, key, "follower", int64(token))
				released <- struct{}{}
			}
		})
		handover(b, func() (func(), error) {
			token, ok, err := seed.acquire(ctx, key, "leader")
			if err != nil || !ok {
				return nil, fmt.Errorf("seed acquire: %v, ok %v", err, ok)
			}
			return func() {
				armed.Store(true)
				_, _ = pool.Exec(ctx, seedRelease, key, "leader", int64(token))
			}, nil
		}, got, released)
		stop()
		wg.Wait()
	})
}

// runClients runs b.N cycles split over clients goroutines, each on its own
// key, and reports statements per second.
func runClients(b *testing.B, clients int, cycle func(key, holder string) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	b.ResetTimer()
	for i := range clients {
		wg.Go(func() {
			key, holder := fmt.Sprintf("bench/%d", i), fmt.Sprintf("client-%d", i)
			for next.Add(1) <= int64(b.N) {
				if err := cycle(key, holder); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(3*b.N)/b.Elapsed().Seconds(), "ops/s")
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
