package etcd_test

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/etcd"
	"github.com/tenure-dev/tenure/internal/etcdbin"
	"github.com/tenure-dev/tenure/internal/leakcheck"
)

func TestMain(m *testing.M) {
	leakcheck.VerifyTestMain(m)
}

// startEtcd starts Debian's etcd binary for t (internal/etcdbin: skipped
// with a notice where it is not installed, failed where it is required)
// and returns its endpoints.
func startEtcd(t testing.TB) []string {
	t.Helper()
	return []string{etcdbin.Start(t)}
}

// newClient returns an etcd client for eps, closed at cleanup.
func newClient(t testing.TB, eps []string) *clientv3.Client {
	t.Helper()
	cl, err := clientv3.New(clientv3.Config{
		Endpoints:   eps,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// newCoordinator returns a Coordinator on cl with a prefix unique to t,
// closed at cleanup.
func newCoordinator(t testing.TB, cl *clientv3.Client, opts ...etcd.Option) *etcd.Coordinator {
	t.Helper()
	c, err := etcd.New(cl, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close() = %v", err)
		}
	})
	return c
}

// ctx returns a context for one call of a test.
func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

// mustAcquire acquires key for holder and fails the test on error.
func mustAcquire(t testing.TB, c tenure.Coordinator, key, holder string, ttl time.Duration) tenure.Grant {
	t.Helper()
	g, err := c.Acquire(ctx(t), key, holder, ttl)
	if err != nil {
		t.Fatalf("Acquire(%q, %q, %s) error = %v", key, holder, ttl, err)
	}
	return g
}
