package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/etcd"
	"github.com/tenure-dev/tenure/internal/etcdbin"
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

// hooks are the hooks that count a client's calls and streams into r.
func (r *rpcCounter) hooks() rpcHooks {
	return rpcHooks{call: func(_ context.Context, method string, _ any) error {
		r.add(method)
		return nil
	}}
}

// countingClient returns a client whose RPCs are counted.
func countingClient(t *testing.T, eps []string) (*clientv3.Client, *rpcCounter) {
	t.Helper()
	rc := &rpcCounter{calls: map[string]int{}}
	return hookedClient(t, eps, rc.hooks()), rc
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
	t.Parallel()
	// etcd's minimum lease TTL is 1.5 election timeouts, in whole seconds
	// rounded up: 1s with a 250ms election timeout (the embedded server's),
	// 2s with etcd's default of 1s.
	for _, setup := range []struct {
		name     string
		election time.Duration
		min      time.Duration
	}{
		{"election timeout 250ms", 250 * time.Millisecond, time.Second},
		{"election timeout 1s", time.Second, 2 * time.Second},
	} {
		t.Run(setup.name, func(t *testing.T) {
			testGrantedTTL(t, setup.election, setup.min)
		})
	}
}

func testGrantedTTL(t *testing.T, election, minTTL time.Duration) {
	srv := etcdbin.New(t, "--election-timeout", fmt.Sprint(election.Milliseconds()), "--heartbeat-interval", fmt.Sprint((election / 10).Milliseconds()))
	cl := newClient(t, []string{srv.URL})
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
			if err != nil || !ok || l.Token != g.Token || l.Holder != g.Holder || l.TTL != g.TTL {
				t.Errorf("Leader() = %v, %v, %v; want %v", l, ok, err, g)
			}
		})
	}
}

// TestRenewNeverLengthens: Renew reports the TTL the keepalive gives the
// lease, but never more than the grant it renews says: a lease that
// another process revoked and granted again under its ID, for longer (see
// TestSpareLeaseRegrantedLonger), must not move the holder's deadline past
// what it was granted. Here the grant handed to Renew says 2s and its
// lease was granted 5s.
func TestRenewNeverLengthens(t *testing.T) {
	t.Parallel()
	cl := newClient(t, startEtcd(t))
	c := newCoordinator(t, cl)
	g := mustAcquire(t, c, "cap/k", "alice", 5*time.Second)
	short := g
	short.TTL = 2 * time.Second
	r, err := c.Renew(ctx(t), short)
	if err != nil {
		t.Fatalf("Renew(%v) = %v", short, err)
	}
	if r.TTL != short.TTL {
		t.Errorf("Renew(%v) TTL = %s; want %s, the grant's (its lease reports %s)", short, r.TTL, short.TTL, g.TTL)
	}
	if r, err = c.Renew(ctx(t), g); err != nil || r.TTL != g.TTL {
		t.Errorf("Renew(%v) = %v, %v; want TTL %s, the lease's", g, r, err, g.TTL)
	}
}

// TestRenewMemberNeverLengthens: as TestRenewNeverLengthens, for a
// membership: RenewMember reports at most the TTL of the member it renews.
func TestRenewMemberNeverLengthens(t *testing.T) {
	t.Parallel()
	c := newCoordinator(t, newClient(t, startEtcd(t)))
	m := mustJoin(t, c, "cap", "m#1", 5*time.Second)
	short := m
	short.TTL = 2 * time.Second
	r, err := c.RenewMember(ctx(t), short)
	if err != nil || r.TTL != short.TTL {
		t.Errorf("RenewMember(%v) = %v, %v; want TTL %s, the member's (its lease reports %s)", short, r, err, short.TTL, m.TTL)
	}
	if r, err = c.RenewMember(ctx(t), m); err != nil || r.TTL != m.TTL {
		t.Errorf("RenewMember(%v) = %v, %v; want TTL %s, the lease's", m, r, err, m.TTL)
	}
}

// TestLeasePerGrant: every grant rides a lease of its own, even two grants
// of one holder with one TTL; renewing one extends that lease only, and
// releasing one leaves the other alone.
func TestLeasePerGrant(t *testing.T) {
	t.Parallel()
	cl := newClient(t, startEtcd(t))
	c := newCoordinator(t, cl)
	const ttl = 5 * time.Second
	a1 := mustAcquire(t, c, "own/a1", "alice", ttl)
	a2 := mustAcquire(t, c, "own/a2", "alice", ttl)
	b1 := mustAcquire(t, c, "own/b1", "bob", ttl)
	l1, l2, lb := leaseOf(t, c, a1.Key), leaseOf(t, c, a2.Key), leaseOf(t, c, b1.Key)
	if l1 == l2 || l1 == lb || l2 == lb {
		t.Fatalf("leases of %v, %v, %v = %x, %x, %x; want one lease per grant", a1, a2, b1, l1, l2, lb)
	}
	time.Sleep(2 * time.Second)
	if _, err := c.Renew(ctx(t), a1); err != nil {
		t.Fatal(err)
	}
	left := func(id clientv3.LeaseID) int64 {
		r, err := cl.TimeToLive(ctx(t), id)
		if err != nil {
			t.Fatal(err)
		}
		return r.TTL
	}
	if got := left(l1); got < 4 {
		t.Errorf("renewed lease of %v has %ds left; want about 5", a1, got)
	}
	if got := left(l2); got > 3 {
		t.Errorf("lease of %v, never renewed, has %ds left 2s after its grant; renewing %v extended it", a2, got, a1)
	}
	if err := c.Release(ctx(t), a2); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := c.Leader(ctx(t), a2.Key); ok {
		t.Errorf("Leader(%q) held after Release", a2.Key)
	}
	if _, err := c.Renew(ctx(t), a2); !errors.Is(err, tenure.ErrLost) {
		t.Errorf("Renew(%v) after Release = %v; want ErrLost", a2, err)
	}
	if _, err := c.Renew(ctx(t), a1); err != nil {
		t.Errorf("Renew(%v) after another grant's release = %v; want renewed", a1, err)
	}
}

// TestRoundTrips counts the calls each operation makes: a fresh Acquire is
// a lease grant and one transaction; Renew is one keepalive and one read;
// Release is one transaction; an Acquire on a lease granted ahead (after a
// refusal) or kept by a Release is one transaction and one lease lookup
// after it: the lookup checks that no other process changed the lease
// meanwhile (its TTL, the keys on it), which the transaction cannot.
func TestRoundTrips(t *testing.T) {
	t.Parallel()
	eps := startEtcd(t)
	cl, rc := countingClient(t, eps)
	c := newCoordinator(t, cl)
	const grant, ka, txn, get, ttl = rpcGrant, rpcKeepAlive, rpcTxn, rpcRange, rpcTimeToLive
	want := func(what string, calls map[string]int) {
		t.Helper()
		got := rc.reset()
		if len(got) != len(calls) {
			t.Errorf("%s made calls %v; want %v", what, got, calls)
			return
		}
		for m, n := range calls {
			if got[m] != n {
				t.Errorf("%s made calls %v; want %v", what, got, calls)
				return
			}
		}
	}
	rc.reset()
	g := mustAcquire(t, c, "rt/k", "alice", 5*time.Second)
	want("fresh Acquire", map[string]int{grant: 1, txn: 1, ttl: 1})
	g, err := c.Renew(ctx(t), g)
	if err != nil {
		t.Fatal(err)
	}
	want("Renew", map[string]int{ka: 1, get: 1})
	if err := c.Release(ctx(t), g); err != nil {
		t.Fatal(err)
	}
	want("Release", map[string]int{txn: 1})
	g = mustAcquire(t, c, "rt/k", "alice", 5*time.Second)
	want("Acquire after the holder's own Release", map[string]int{txn: 1, ttl: 1})

	if _, err := c.Acquire(ctx(t), "rt/k", "bob", 5*time.Second); !errors.Is(err, tenure.ErrHeld) {
		t.Fatalf("bob's Acquire of a held key = %v; want ErrHeld", err)
	}
	want("refused Acquire", map[string]int{grant: 1, txn: 1})
	if err := c.Release(ctx(t), g); err != nil {
		t.Fatal(err)
	}
	rc.reset()
	gb := mustAcquire(t, c, "rt/k", "bob", 5*time.Second)
	want("Acquire after a refusal", map[string]int{txn: 1, ttl: 1})
	if gb.Token <= g.Token {
		t.Errorf("bob's token %d; want > %d", gb.Token, g.Token)
	}
}

// TestLeaseGrantedAheadCountsItsAge: a grant on a lease granted by an
// earlier, refused Acquire says when that lease was granted (Sent), so the
// holder's deadline counts the lease's whole age; the lease at etcd ends no
// sooner than Sent + TTL.
func TestLeaseGrantedAheadCountsItsAge(t *testing.T) {
	t.Parallel()
	cl := newClient(t, startEtcd(t))
	c := newCoordinator(t, cl)
	ga := mustAcquire(t, c, "ahead/k", "alice", 4*time.Second)
	refused := time.Now()
	if _, err := c.Acquire(ctx(t), "ahead/k", "bob", 4*time.Second); !errors.Is(err, tenure.ErrHeld) {
		t.Fatalf("bob's Acquire of a held key = %v; want ErrHeld", err)
	}
	time.Sleep(time.Second) // a quarter of its TTL: the lease is still fresh enough to use
	if err := c.Release(ctx(t), ga); err != nil {
		t.Fatal(err)
	}
	gb := mustAcquire(t, c, "ahead/k", "bob", 4*time.Second)
	if gb.Sent.Time().After(refused.Add(500 * time.Millisecond)) {
		t.Fatalf("grant on a lease granted ahead has Sent %s after the refusal that granted it; want the lease's own grant, its whole age counted", gb.Sent.Time().Sub(refused))
	}
	r, err := cl.TimeToLive(ctx(t), leaseOf(t, c, gb.Key))
	if err != nil {
		t.Fatal(err)
	}
	// etcd rounds the time left down to whole seconds.
	if atEtcd, promised := time.Duration(r.TTL+1)*time.Second, time.Until(gb.Sent.Time().Add(gb.TTL)); promised > atEtcd {
		t.Errorf("grant promises %s more lease; etcd has at most %s", promised, atEtcd)
	}
}

func TestExpiredGrantIsNeverRevived(t *testing.T) {
	t.Parallel() // it mostly waits for leases to expire
	cl := newClient(t, startEtcd(t))
	c := newCoordinator(t, cl)
	g1 := mustAcquire(t, c, "expire/k1", "alice", time.Second) // granted 2s
	old := leaseOf(t, c, g1.Key)

	// Not renewed: the lease expires on etcd's clock.
	waitFree(t, c, g1.Key, time.Now().Add(g1.TTL+5*time.Second))
	if _, err := c.Renew(ctx(t), g1); !errors.Is(err, tenure.ErrLost) {
		t.Fatalf("Renew(%v) after expiry = %v; want ErrLost", g1, err)
	}
	g2 := mustAcquire(t, c, "expire/k1", "alice", time.Second)
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

// TestRenewGrantOfAnotherCoordinator: a process restarts; the new
// Coordinator does not know the lease of the grants the old one made, and
// still renews them correctly (one more read, to find the lease) and
// releases them.
func TestRenewGrantOfAnotherCoordinator(t *testing.T) {
	t.Parallel()
	eps := startEtcd(t)
	cl, rc := countingClient(t, eps)
	c1 := newCoordinator(t, cl)
	g := mustAcquire(t, c1, "restart/k", "alice", 3*time.Second)
	gone := mustAcquire(t, c1, "restart/gone", "alice", 3*time.Second)
	if err := c1.Release(ctx(t), gone); err != nil {
		t.Fatal(err)
	}
	c1.Close()

	c2 := newCoordinator(t, cl)
	rc.reset()
	r, err := c2.Renew(ctx(t), g)
	if err != nil || r.TTL != 3*time.Second || r.Sent.IsZero() {
		t.Errorf("new coordinator's Renew(%v) = %v, %v; want renewed with TTL 3s", g, r, err)
	}
	if calls := rc.reset(); calls[rpcRange] != 2 || calls[rpcKeepAlive] != 1 || len(calls) != 2 {
		t.Errorf("renewal of another coordinator's grant made calls %v; want two reads and one keepalive", calls)
	}
	if _, err := c2.Renew(ctx(t), gone); !errors.Is(err, tenure.ErrLost) {
		t.Errorf("new coordinator's Renew(%v) of a released grant = %v; want ErrLost", gone, err)
	}
	if err := c2.Release(ctx(t), r); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := c2.Leader(ctx(t), g.Key); ok {
		t.Errorf("Leader(%q) held after the new coordinator released it", g.Key)
	}
}

func TestWatchCoalescesForSlowReaders(t *testing.T) {
	t.Parallel()
	cl := newClient(t, startEtcd(t))
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
				if ev.Grant.Key != last.Key || ev.Grant.Holder != last.Holder || ev.Grant.Token != last.Token || ev.Grant.TTL != last.TTL {
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
	t.Parallel()
	cl := newClient(t, startEtcd(t))
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
	t.Parallel()
	cl := newClient(t, startEtcd(t))
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
