package etcd_test

import (
	"context"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/etcdtesting"

	clientv3 "go.etcd.io/etcd/client/v3"

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
