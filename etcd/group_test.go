package etcd_test

import (
	"context"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/partition"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/etcdbin"
	"github.com/tenure-dev/tenure/partition/partitiontest"
)

// TestGroupConformanceEtcdBinary runs the suite on the Debian etcd binary
// (3.4), whose nested transactions the claims rely on. A partition is
// freed by hand as etcdctl del would: a delete of its key.
func TestGroupConformanceEtcdBinary(t *testing.T) {
	t.Parallel()
	b := etcdbin.New(t)
	partitiontest.Run(t, func(t *testing.T) partition.Coordinator {
		return newCoordinator(t, newClient(t, []string{b.URL}))
	}, partitiontest.WithTTL(2*time.Second), partitiontest.WithFreeByHand(func(t *testing.T, group, name string) {
		c := newCoordinator(t, newClient(t, []string{b.URL}))
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		resp, err := newClient(t, []string{b.URL}).Delete(ctx, c.EtcdKey(partition.Key(group, name)))
		if err != nil || resp.Deleted != 1 {
			t.Fatalf("delete partition %s/%s by hand = %v, %v; want one key deleted", group, name, resp, err)
		}
	}))
}

// forceRelease releases the live grant on key, whoever holds it, as
// `tenure release --key KEY --force` does.
func forceRelease(t *testing.T, c tenure.Coordinator, key string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	g, held, err := c.Leader(ctx, key)
	if err != nil || !held {
		t.Fatalf("Leader(%q) = %v, %v, %v; want the live grant", key, g, held, err)
	}
	if err := c.Release(ctx, g); err != nil {
		t.Fatalf("Release(%s) error = %v", g, err)
	}
}
