package etcd_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/tenure-dev/tenure"
)

// randomFaults returns hooks that, at random from seed, delay requests (up
// to 30ms), lose 5% of them, drop 15% of the replies etcd applied and 20%
// of the keepalive replies, and hold back watch responses (up to 100ms).
func randomFaults(seed uint64) rpcHooks {
	var mu sync.Mutex
	r := rand.New(rand.NewPCG(seed, 18))
	roll := func(p float64) bool {
		mu.Lock()
		defer mu.Unlock()
		return r.Float64() < p
	}
	upTo := func(d time.Duration) time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return time.Duration(r.Int64N(int64(d)))
	}
	return rpcHooks{
		call: func(ctx context.Context, method string, _ any) error {
			if method == rpcWatch {
				return nil
			}
			if err := sleepCtx(ctx, upTo(30*time.Millisecond)); err != nil {
				return err
			}
			if roll(0.05) {
				return errLostRequest
			}
			return nil
		},
		reply: func(_ string, _ stamp, _, _ any, err error) error {
			if err == nil && roll(0.15) {
				return errDropped
			}
			return err
		},
		recv: func(s *rpcStream, msg any) error {
			switch msg.(type) {
			case *pb.LeaseKeepAliveResponse:
				if roll(0.2) {
					return errDropped
				}
			case *pb.WatchResponse:
				return sleepCtx(s.ctx, upTo(100*time.Millisecond))
			}
			return nil
		},
	}
}

// TestUnknownOutcomesNeverMakeTwoLeaders: three Electors contend for one
// key for 8s, each through a client whose calls are delayed, lost, or
// applied with their replies dropped, at random; each leader resigns after
// a random while. No two terms overlap, no token is given twice or goes
// back, every term begins on the token etcd holds, no local deadline
// outlives its lease, and leaders keep changing.
func TestUnknownOutcomesNeverMakeTwoLeaders(t *testing.T) {
	t.Parallel() // it mostly waits
	eps := startEtcd(t)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	leases := newLeaseLog()
	plain := newClient(t, eps)
	const key, ttl = "unknown/k", 2 * time.Second
	log := newTermLog(t, plain, newCoordinator(t, plain).EtcdKey(key), leases)
	var stops []func()
	for i, holder := range []string{"alice", "bob", "carol"} {
		c := newCoordinator(t, hookedClient(t, eps, leases.hooks(), randomFaults(seed+uint64(i))))
		cfg := contenderConfig(key, holder, ttl)
		hold := rand.New(rand.NewPCG(seed, uint64(i)))
		var mu sync.Mutex
		stops = append(stops, runElector(t, c, cfg, log.lead(holder, cfg, func(ctx context.Context, _ *tenure.Term) {
			mu.Lock()
			d := 100*time.Millisecond + time.Duration(hold.Int64N(int64(1400*time.Millisecond)))
			mu.Unlock()
			_ = sleepCtx(ctx, d) // then resign
		})))
	}
	time.Sleep(8 * time.Second)
	for _, stop := range stops {
		stop()
	}
	log.verify()
	if !log.waitFor(0, func(s []termSpan) bool { return len(s) >= 3 }) {
		t.Errorf("fewer than 3 terms in 8s; want leaders to keep changing")
	}
}
