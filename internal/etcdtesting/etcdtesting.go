// Package etcdtesting holds the helpers that tests of the etcd coordinator
// share, whichever etcd they run on (Debian's binary, or one embedded in the
// test process): a client, a coordinator and a context, each cleaned up
// when the test ends.
package etcdtesting

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/etcd"
)

// NewClient returns an etcd client for eps, closed at cleanup.
func NewClient(t testing.TB, eps []string) *clientv3.Client {
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

// NewCoordinator returns a Coordinator on cl, closed at cleanup (a failed
// Close fails the test).
func NewCoordinator(t testing.TB, cl *clientv3.Client, opts ...etcd.Option) *etcd.Coordinator {
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

// Ctx returns a context for one call of a test: 10 seconds at most.
func Ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

// MustAcquire acquires key for holder and fails the test on error.
func MustAcquire(t testing.TB, c tenure.Coordinator, key, holder string, ttl time.Duration) tenure.Grant {
	t.Helper()
	g, err := c.Acquire(Ctx(t), key, holder, ttl)
	if err != nil {
		t.Fatalf("Acquire(%q, %q, %s) error = %v", key, holder, ttl, err)
	}
	return g
}
