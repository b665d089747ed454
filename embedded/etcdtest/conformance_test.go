package etcdtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/etcdtesting"
	"github.com/tenure-dev/tenure/partition"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/partition/partitiontest"
	"github.com/tenure-dev/tenure/tenuretest"
)

// The suite's Restart check runs after the others, never concurrently with
// them, so restarting the servers under the shared client is safe.

func TestConformanceEmbedded(t *testing.T) { conformanceEmbedded(t, 1) }

func TestConformanceEmbeddedCluster(t *testing.T) { conformanceEmbedded(t, 3) }

// conformanceEmbedded runs the suite on an n-member embedded cluster whose
// members all restart in the Restart check.
func conformanceEmbedded(t *testing.T, n int) {
	t.Parallel() // it mostly waits for leases to expire
	c := startCluster(t, n)
	cl := newClient(t, c.endpoints())
	tenuretest.RunCoordinatorTests(t, func(t *testing.T) tenure.Coordinator {
		return newCoordinator(t, cl)
	},
		tenuretest.WithTTL(2*time.Second),
		tenuretest.WithEdits(etcdtesting.Edits(cl, newCoordinator(t, cl).EtcdKey)),
		tenuretest.WithRestart(func(t *testing.T) {
			c.stopAll()
			c.startAll(t)
		}),
	)
}

// TestGroupConformanceEmbedded runs the partition group suite on an
// embedded etcd member, each group member with its own client, as separate
// processes would have. A partition is freed by hand as `tenure release
// --force` frees a key: the live grant read with Leader, then Release.
func TestGroupConformanceEmbedded(t *testing.T) {
	t.Parallel() // it mostly waits for leases to expire
	c := startCluster(t, 1)
	partitiontest.Run(t, func(t *testing.T) partition.Coordinator {
		return newCoordinator(t, newClient(t, c.endpoints()))
	}, partitiontest.WithTTL(2*time.Second), partitiontest.WithFreeByHand(func(t *testing.T, group, name string) {
		forceRelease(t, newCoordinator(t, newClient(t, c.endpoints())), partition.Key(group, name))
	}), sameAsBinary("MovedMembership"), sameAsBinary("OtherGroupsOwner"), sameAsBinary("IgnoredEdit"))
}

// sameAsBinary leaves check out here: its edit by hand (an etcdctl put)
// meets the same coordinator code on the Debian etcd, in package etcd's
// TestGroupConformanceEtcdBinary.
func sameAsBinary(check string) partitiontest.Option {
	return partitiontest.WithoutByHand(check, "run on the same coordinator by package etcd's TestGroupConformanceEtcdBinary, on the Debian etcd")
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
