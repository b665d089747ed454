// Package etcdtest_test runs package etcd's coordinator on in-process etcd
// members (package embedded): the conformance suites, raft leader loss and
// quorum loss in a three-member cluster, and TLS. The etcd module's own
// tests run on Debian's etcd binary.
package etcdtest_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/etcdtesting"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/embedded"
	"github.com/tenure-dev/tenure/etcd"
	"github.com/tenure-dev/tenure/internal/leakcheck"
)

func TestMain(m *testing.M) {
	leakcheck.VerifyTestMain(m)
}

// member is an embedded etcd member that a test can restart.
type member struct {
	mu  sync.Mutex
	s   *embedded.Server
	cfg embedded.Config
}

func (m *member) server() *embedded.Server {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.s
}

// stop closes the member (it may be restarted with start).
func (m *member) stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.s != nil {
		m.s.Close()
		m.s = nil
	}
}

// start starts the member from its configuration and data directory.
func (m *member) start(ctx context.Context) error {
	s, err := embedded.Start(ctx, m.cfg)
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.s = s
	m.mu.Unlock()
	return nil
}

// cluster is n embedded members, started together.
type cluster struct {
	members []*member
}

func (c *cluster) endpoints() []string {
	var eps []string
	for _, m := range c.members {
		eps = append(eps, m.cfg.ClientURLs...)
	}
	return eps
}

// startAll starts every stopped member concurrently: each waits for a quorum.
// The bound is liveness with slack: a quorum forms in about a second, but a
// loaded 2-core machine running -race has taken more than 30 s.
func (c *cluster) startAll(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(c.members))
	for i, m := range c.members {
		if m.server() != nil {
			continue
		}
		wg.Go(func() { errs[i] = m.start(ctx) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			c.stopAll()
			t.Fatalf("start member %d: %v", i+1, err)
		}
	}
}

func (c *cluster) stopAll() {
	for _, m := range c.members {
		m.stop()
	}
}

// leader returns the member that is the raft leader, waiting for one.
func (c *cluster) leader(t testing.TB) *member {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, m := range c.members {
			if s := m.server(); s != nil && s.IsLeader() {
				return m
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no raft leader within 10s")
	return nil
}

// startCluster starts an n-member embedded cluster, stopped at cleanup.
// Each function in configure may change the members' configurations.
func startCluster(t testing.TB, n int, configure ...func(*embedded.Config)) *cluster {
	t.Helper()
	cfgs, err := embedded.LocalCluster(t.TempDir(), n)
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{}
	for _, cfg := range cfgs {
		cfg.StartTimeout = 90 * time.Second // see startAll
		for _, f := range configure {
			f(&cfg)
		}
		c.members = append(c.members, &member{cfg: cfg})
	}
	c.startAll(t)
	t.Cleanup(c.stopAll)
	return c
}

// newClient returns an etcd client for eps, closed at cleanup.
func newClient(t testing.TB, eps []string) *clientv3.Client {
	t.Helper()
	return etcdtesting.NewClient(t, eps)
}

// newCoordinator returns a Coordinator on cl, closed at cleanup.
func newCoordinator(t testing.TB, cl *clientv3.Client, opts ...etcd.Option) *etcd.Coordinator {
	t.Helper()
	return etcdtesting.NewCoordinator(t, cl, opts...)
}

// ctx returns a context for one call of a test.
func ctx(t testing.TB) context.Context { return etcdtesting.Ctx(t) }

// mustAcquire acquires key for holder and fails the test on error.
func mustAcquire(t testing.TB, c tenure.Coordinator, key, holder string, ttl time.Duration) tenure.Grant {
	t.Helper()
	return etcdtesting.MustAcquire(t, c, key, holder, ttl)
}
