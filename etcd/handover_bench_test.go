package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/tenure-dev/tenure"
)

// BenchmarkHandover measures a graceful handover — the leader is done and
// lets go; a follower that is already campaigning starts acting — for
// tenure's Elector and, side by side on the same etcd member in the same run,
// for etcd's own election recipe (client/v3/concurrency.Election: Resign,
// and the waiting Campaign returns). Both followers learn of the release
// through an etcd watch, so the figures compare the cost of each path, not
// polling intervals. The follower has been waiting for settle when the
// leader lets go. Run with:
//
//	go test -run '^$' -bench Handover -benchtime 200x ./etcd/
func BenchmarkHandover(b *testing.B) {
	eps := startEtcd(b)
	b.Run("impl=tenure", func(b *testing.B) { benchTenureHandover(b, eps) })
	b.Run("impl=etcd-concurrency", func(b *testing.B) { benchEtcdElectionHandover(b, eps) })
}

// settle is how long a follower has been waiting when the leader lets go.
// etcd delivers events to a watch opened at a past revision only after its
// next catch-up pass (every 100ms), so a handover right after a follower
// started watching measures that pass, not the handover; real followers have
// usually been waiting far longer.
const settle = 150 * time.Millisecond

// reportLatencies reports p50 and p99 of ds in milliseconds.
func reportLatencies(b *testing.B, ds []time.Duration) {
	slices.Sort(ds)
	q := func(p float64) float64 { return float64(ds[int(p*float64(len(ds)-1))]) / float64(time.Millisecond) }
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op") // the loop's time includes set-up; the quantiles are the figures
}

func benchTenureHandover(b *testing.B, eps []string) {
	coords := []*refusals{
		{Coordinator: newCoordinator(b, newClient(b, eps))},
		{Coordinator: newCoordinator(b, newClient(b, eps))},
	}
	const key = "bench/handover"
	config := func(i int) tenure.Config {
		cfg := tenure.DefaultConfig()
		cfg.Key, cfg.Holder, cfg.TTL = key, fmt.Sprintf("node-%d", i), 10*time.Second
		cfg.RetryPeriod = time.Second // the watch, not the retry, must wake the follower
		return cfg
	}

	type leading struct {
		release chan time.Time // the leader is told to let go; it reports when
		done    chan error     // its Run returned
	}
	// lead starts node i campaigning and returns once it leads. Its term
	// records how long after the previous leader let go it started acting.
	lead := func(i int, prevReleased <-chan time.Time, took *time.Duration) (*leading, error) {
		e, err := tenure.NewElector(coords[i], config(i))
		if err != nil {
			return nil, err
		}
		l := &leading{release: make(chan time.Time, 1), done: make(chan error, 1)}
		started := make(chan struct{})
		go func() {
			l.done <- e.Run(context.Background(), func(ctx context.Context, term *tenure.Term) error {
				if prevReleased != nil {
					*took = time.Since(<-prevReleased)
				}
				close(started)
				<-l.release
				return nil
			})
		}()
		select {
		case <-started:
			return l, nil
		case err := <-l.done:
			return nil, fmt.Errorf("node-%d: Run() = %v before leading", i, err)
		case <-time.After(30 * time.Second):
			return nil, errors.New("no leader within 30s")
		}
	}

	cur, err := lead(0, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		next := (i + 1) % 2
		coords[next].refused = make(chan struct{})
		coords[next].once = sync.Once{}
		released := make(chan time.Time, 1)
		var took time.Duration
		nextCh := make(chan *leading, 1)
		errCh := make(chan error, 1)
		go func() {
			l, err := lead(next, released, &took)
			if err != nil {
				errCh <- err
				return
			}
			nextCh <- l
		}()
		<-coords[next].refused // the follower campaigns and waits
		time.Sleep(settle)
		now := time.Now()
		released <- now
		close(cur.release) // resign: release the key
		if err := <-cur.done; err != nil {
			b.Fatalf("leader's Run() = %v", err)
		}
		select {
		case cur = <-nextCh:
		case err := <-errCh:
			b.Fatal(err)
		}
		ds = append(ds, took)
	}
	b.StopTimer()
	close(cur.release)
	<-cur.done
	reportLatencies(b, ds)
}

func benchEtcdElectionHandover(b *testing.B, eps []string) {
	const prefix = "/bench/etcd-election"
	var elections []*concurrency.Election
	for range 2 {
		s, err := concurrency.NewSession(newClient(b, eps), concurrency.WithTTL(10))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		elections = append(elections, concurrency.NewElection(s, prefix))
	}
	watcher := newClient(b, eps)
	ctx := context.Background()
	if err := elections[0].Campaign(ctx, "node-0"); err != nil {
		b.Fatal(err)
	}
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cur, next := elections[i%2], elections[(i+1)%2]
		won := make(chan time.Time, 1)
		go func() {
			if err := next.Campaign(ctx, fmt.Sprintf("node-%d", (i+1)%2)); err != nil {
				b.Error(err)
			}
			won <- time.Now()
		}()
		// Wait until the follower's candidacy is in etcd: it now waits.
		for {
			resp, err := watcher.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
			if err != nil {
				b.Fatal(err)
			}
			if resp.Count == 2 {
				break
			}
			time.Sleep(time.Millisecond)
		}
		time.Sleep(settle)
		released := time.Now()
		if err := cur.Resign(ctx); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, (<-won).Sub(released))
	}
	b.StopTimer()
	reportLatencies(b, ds)
}
