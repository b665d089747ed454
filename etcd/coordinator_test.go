package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/embedded"
	"github.com/tenure-dev/tenure/etcd"
)

// rpcCounter counts the gRPC calls and streams a client makes, by method.
type rpcCounter struct {
	mu    sync.Mutex
	calls map[string]int
}

func (r *rpcCounter) add(method string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[method]++
}

func (r *rpcCounter) reset() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.calls
	r.calls = map[string]int{}
	return c
}

// countingClient returns a client whose RPCs are counted.
func countingClient(t *testing.T, eps []string) (*clientv3.Client, *rpcCounter) {
	t.Helper()
	rc := &rpcCounter{calls: map[string]int{}}
	cl, err := clientv3.New(clientv3.Config{
		Endpoints:   eps,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
		DialOptions: []grpc.DialOption{
			grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
				rc.add(method)
				return invoker(ctx, method, req, reply, cc, opts...)
			}),
			grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
				rc.add(method)
				return streamer(ctx, desc, cc, method, opts...)
			}),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl, rc
}

// leaseOf returns the lease the etcd key of key is attached to.
func leaseOf(t *testing.T, c *etcd.Coordinator, key string) clientv3.LeaseID {
	t.Helper()
	resp, err := c.Client().Get(ctx(t), c.EtcdKey(key))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		t.Fatalf("etcd key %q missing", c.EtcdKey(key))
	}
	return clientv3.LeaseID(resp.Kvs[0].Lease)
}

func TestGrantedTTLIsWhatEtcdGranted(t *testing.T) {
	// etcd's minimum lease TTL is 1.5 election timeouts, in whole seconds
	// rounded up: 1s for a one-member embedded cluster (250ms election
	// timeout), 2s with etcd's default of 1s.
	for _, setup := range []struct {
		name     string
		election time.Duration
		min      time.Duration
	}{
		{"one member", 0, time.Second},
		{"election timeout 1s", time.Second, 2 * time.Second},
	} {
		t.Run(setup.name, func(t *testing.T) {
			testGrantedTTL(t, setup.election, setup.min)
		})
	}
}

func testGrantedTTL(t *testing.T, election, minTTL time.Duration) {
	cl := newClient(t, startCluster(t, 1, func(c *embedded.Config) {
		if election != 0 {
			c.ElectionTimeout, c.HeartbeatInterval = election, election/10
		}
	}).endpoints())
	c := newCoordinator(t, cl)
	tests := []struct {
		ask, want time.Duration
	}{
		{time.Millisecond, minTTL},
		{time.Second, minTTL},
		{1500 * time.Millisecond, max(minTTL, 2*time.Second)}, // whole seconds, rounded up
		{2 * time.Second, 2 * time.Second},
		{2500 * time.Millisecond, 3 * time.Second},
		{7 * time.Second, 7 * time.Second},
	}
	for i, tc := range tests {
		t.Run(tc.ask.String(), func(t *testing.T) {
			holder := fmt.Sprintf("h%d", i)
			g := mustAcquire(t, c, "ttl/"+holder, holder, tc.ask)
			if g.TTL != tc.want {
				t.Errorf("Acquire(ttl %s) TTL = %s; want %s", tc.ask, g.TTL, tc.want)
			}
			ttl, err := cl.TimeToLive(ctx(t), leaseOf(t, c, g.Key))
			if err != nil {
				t.Fatal(err)
			}
			if got := time.Duration(ttl.GrantedTTL) * time.Second; got != g.TTL {
				t.Errorf("lease granted TTL = %s; grant reports %s", got, g.TTL)
			}
			r, err := c.Renew(ctx(t), g)
			if err != nil {
				t.Fatalf("Renew() error = %v", err)
			}
			if r.TTL != tc.want {
				t.Errorf("Renew() TTL = %s; want %s", r.TTL, tc.want)
			}
			l, ok, err := c.Leader(ctx(t), g.Key)
			if err != nil || !ok || l != g {
				t.Errorf("Leader() = %v, %v, %v; want %v", l, ok, err, g)
			}
			// Acquiring again on the existing shared lease reports the
			// time it has left since the renewal's keepalive was sent:
			// at most the TTL, at least half of it.
			g2 := mustAcquire(t, c, "ttl/"+holder+"/2", holder, tc.ask)
			if g2.TTL > tc.want || g2.TTL < tc.want/2 {
				t.Errorf("second Acquire(ttl %s) TTL = %s; want in [%s, %s]", tc.ask, g2.TTL, tc.want/2, tc.want)
			}
		})
	}
}

func TestSharedLeasePerHolderAndTTL(t *testing.T) {
	cl := newClient(t, startCluster(t, 1).endpoints())
	c := newCoordinator(t, cl)
	const ttl = 5 * time.Second
	a1 := mustAcquire(t, c, "shared/a1", "alice", ttl)
	a2 := mustAcquire(t, c, "shared/a2", "alice", ttl)
	a3 := mustAcquire(t, c, "shared/a3", "alice", ttl)
	b1 := mustAcquire(t, c, "shared/b1", "bob", ttl)
	along := mustAcquire(t, c, "shared/along", "alice", 9*time.Second)

	la := leaseOf(t, c, a1.Key)
	for _, g := range []tenure.Grant{a2, a3} {
		if l := leaseOf(t, c, g.Key); l != la {
			t.Errorf("%v is on lease %x; want alice's shared lease %x", g, l, la)
		}
	}
	if l := leaseOf(t, c, b1.Key); l == la {
		t.Errorf("bob's %v shares alice's lease %x; want a lease per holder", b1, l)
	}
	if l := leaseOf(t, c, along.Key); l == la {
		t.Errorf("alice's %v with TTL 9s shares her 5s lease %x; want a lease per TTL", along, l)
	}

	// Releasing one key deletes that key only; the lease and the other
	// keys stay.
	if err := c.Release(ctx(t), a2); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := c.Leader(ctx(t), a2.Key); ok {
		t.Errorf("Leader(%q) held after Release", a2.Key)
	}
	res, err := c.RenewBatch(ctx(t), []tenure.Grant{a1, a2, a3, b1})
	if err != nil {
		t.Fatal(err)
	}
	for i, wantLost := range []bool{false, true, false, false} {
		if lost := errors.Is(res[i].Err, tenure.ErrLost); lost != wantLost || (!wantLost && res[i].Err != nil) {
			t.Errorf("RenewBatch result %d = %v, %v; want lost = %v", i, res[i].Grant, res[i].Err, wantLost)
		}
	}
	if l := leaseOf(t, c, a3.Key); l != la {
		t.Errorf("after Release of a2, a3 is on lease %x; want %x", l, la)
	}
}

func TestRenewBatchRoundTrips(t *testing.T) {
	eps := startCluster(t, 1).endpoints()
	cl, rc := countingClient(t, eps)
	c := newCoordinator(t, cl)
	for _, n := range []int{1, 100, 300} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			holder := fmt.Sprintf("node-%d", n)
			gs := make([]tenure.Grant, n)
			for i := range gs {
				gs[i] = mustAcquire(t, c, fmt.Sprintf("many/%d/%d", n, i), holder, 5*time.Second)
			}
			if !etcd.WaitLineReady(c) {
				t.Fatal("the coordinator does not follow the line of candidates")
			}
			rc.reset()
			res, err := c.RenewBatch(ctx(t), gs)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range res {
				if r.Err != nil || r.Grant.Token != gs[i].Token {
					t.Fatalf("RenewBatch result %d = %v, %v; want %v renewed", i, r.Grant, r.Err, gs[i])
				}
			}
			calls := rc.reset()
			delete(calls, "/etcdserverpb.Watch/Watch") // the line follower's stream may open late
			wantTxns := (n + 127) / 128                // etcd's default --max-txn-ops
			if got := calls["/etcdserverpb.Lease/LeaseKeepAlive"]; got != 1 {
				t.Errorf("renewing %d grants opened %d keepalive streams; want 1 (one shared lease): %v", n, got, calls)
			}
			if got := calls["/etcdserverpb.KV/Txn"]; got != wantTxns {
				t.Errorf("renewing %d grants made %d transactions; want %d: %v", n, got, wantTxns, calls)
			}
			if len(calls) != 2 {
				t.Errorf("renewing %d grants made calls %v; want only keepalive and txn", n, calls)
			}
		})
	}
}

func TestExpiredSharedLeaseIsReplaced(t *testing.T) {
	t.Parallel() // it mostly waits for leases to expire
	cl := newClient(t, startCluster(t, 1).endpoints())
	c := newCoordinator(t, cl)
	g1 := mustAcquire(t, c, "expire/k1", "alice", time.Second) // granted 2s
	old := leaseOf(t, c, g1.Key)

	// Not renewed: the lease expires on etcd's clock.
	waitFree(t, c, g1.Key, time.Now().Add(g1.TTL+5*time.Second))
	if _, err := c.Renew(ctx(t), g1); !errors.Is(err, tenure.ErrLost) {
		t.Fatalf("Renew(%v) after expiry = %v; want ErrLost", g1, err)
	}
	g2 := mustAcquire(t, c, "expire/k2", "alice", time.Second)
	if l := leaseOf(t, c, g2.Key); l == old {
		t.Errorf("after lease %x expired, new grant %v is on it again", old, g2)
	}
	if _, err := c.Renew(ctx(t), g2); err != nil {
		t.Errorf("Renew(%v) on the new lease = %v", g2, err)
	}
	if _, err := c.Renew(ctx(t), g1); !errors.Is(err, tenure.ErrLost) {
		t.Errorf("Renew(%v) after expiry = %v; want ErrLost (never revived)", g1, err)
	}
}

// waitFree polls Leader until key is free, failing at deadline.
func waitFree(t *testing.T, c tenure.Coordinator, key string, deadline time.Time) {
	t.Helper()
	for {
		_, ok, err := c.Leader(ctx(t), key)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("key %q still held at the deadline", key)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestRenewGrantOfAnotherCoordinator(t *testing.T) {
	// A process restarts: the new Coordinator does not know the lease of
	// grants the old one made, and must still renew them correctly.
	eps := startCluster(t, 1).endpoints()
	cl, rc := countingClient(t, eps)
	c1 := newCoordinator(t, cl)
	g := mustAcquire(t, c1, "restart/k", "alice", 3*time.Second)
	gone := mustAcquire(t, c1, "restart/gone", "alice", 3*time.Second)
	if err := c1.Release(ctx(t), gone); err != nil {
		t.Fatal(err)
	}
	lease := leaseOf(t, c1, g.Key)
	c1.Close()

	c2 := newCoordinator(t, cl)
	res, err := c2.RenewBatch(ctx(t), []tenure.Grant{g, gone})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Err != nil || res[0].Grant.TTL != 3*time.Second {
		t.Errorf("new coordinator's Renew(%v) = %v, %v; want renewed with TTL 3s", g, res[0].Grant, res[0].Err)
	}
	if !errors.Is(res[1].Err, tenure.ErrLost) {
		t.Errorf("new coordinator's Renew(%v) of a released grant = %v; want ErrLost", gone, res[1].Err)
	}
	// The lease was adopted: the next renewal is one keepalive and one txn,
	// and the holder's next key joins the same lease.
	rc.reset()
	if _, err := c2.Renew(ctx(t), g); err != nil {
		t.Fatal(err)
	}
	if calls := rc.reset(); calls["/etcdserverpb.Lease/LeaseKeepAlive"] != 1 || calls["/etcdserverpb.KV/Txn"] != 1 || len(calls) != 2 {
		t.Errorf("second renewal made calls %v; want one keepalive and one txn", calls)
	}
	g2 := mustAcquire(t, c2, "restart/k2", "alice", 3*time.Second)
	if l := leaseOf(t, c2, g2.Key); l != lease {
		t.Errorf("new grant on lease %x; want the adopted lease %x", l, lease)
	}
}

func TestWatchCoalescesForSlowReaders(t *testing.T) {
	cl := newClient(t, startCluster(t, 1).endpoints())
	c := newCoordinator(t, cl)
	const key = "watch/slow"
	ch, err := c.Watch(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	const changes = 20
	var last tenure.Grant
	for i := range changes / 2 {
		last = mustAcquire(t, c, key, fmt.Sprintf("h%d", i), 5*time.Second)
		if i < changes/2-1 {
			if err := c.Release(ctx(t), last); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Only now read: the reader sees the latest state, not every change.
	n := 0
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatal("watch closed")
			}
			n++
			if ev.Held && ev.Grant.Token == last.Token {
				if ev.Grant != last {
					t.Errorf("event grant = %v; want %v", ev.Grant, last)
				}
				if n >= changes {
					t.Errorf("slow reader received %d events for %d changes; want them coalesced", n, changes)
				}
				t.Logf("%d events for %d changes", n, changes)
				return
			}
		case <-timeout:
			t.Fatalf("no event for the last grant %v within 10s (%d events)", last, n)
		}
	}
}

func TestWatchEndsWithCoordinator(t *testing.T) {
	cl := newClient(t, startCluster(t, 1).endpoints())
	c, err := etcd.New(cl)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := c.Watch(context.Background(), "watch/close")
	if err != nil {
		t.Fatal(err)
	}
	if ev := <-ch; ev.Held {
		t.Fatalf("first event = %+v; want free", ev)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case _, ok := <-ch:
		if ok {
			t.Fatal("event after Close; want the channel closed")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("watch channel not closed within 5s of Close")
	}
	if _, err := c.Watch(context.Background(), "watch/close"); !errors.Is(err, tenure.ErrClosed) {
		t.Errorf("Watch after Close error = %v; want ErrClosed", err)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	if _, err := etcd.New(nil); !errors.Is(err, etcd.ErrInvalidConfig) {
		t.Errorf("New(nil) error = %v; want ErrInvalidConfig", err)
	}
	cl := newClient(t, []string{"127.0.0.1:1"}) // never dialled
	if _, err := etcd.New(cl, etcd.WithPrefix("")); !errors.Is(err, etcd.ErrInvalidConfig) {
		t.Errorf("New(WithPrefix(\"\")) error = %v; want ErrInvalidConfig", err)
	}
}

func TestPrefix(t *testing.T) {
	cl := newClient(t, startCluster(t, 1).endpoints())
	c := newCoordinator(t, cl, etcd.WithPrefix("/custom/"))
	g := mustAcquire(t, c, "jobs", "alice", 5*time.Second)
	resp, err := cl.Get(ctx(t), "/custom/jobs")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "alice" || uint64(resp.Kvs[0].ModRevision) != g.Token {
		t.Fatalf("etcd key /custom/jobs = %v; want value \"alice\" created at revision %d", resp.Kvs, g.Token)
	}
	other := newCoordinator(t, cl) // default prefix: a different key space
	if _, ok, err := other.Leader(ctx(t), "jobs"); err != nil || ok {
		t.Errorf("Leader under %s = %v, %v; want free", etcd.DefaultPrefix, ok, err)
	}
}
