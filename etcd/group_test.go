package etcd_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure/partition"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/etcdbin"
	"github.com/tenure-dev/tenure/partition/partitiontest"
)

// TestGroupConformanceEtcdBinary runs the suite on the Debian etcd binary
// (3.4), whose nested transactions the claims rely on. A partition is
// freed by hand as etcdctl del would: a delete of its key. A membership is
// moved to another group by hand as etcdctl put would: a copy of its
// membership key under the other group, put on its lease. Its member stays
// a member of its own group (kept): the copy has no mark of that group on
// the lease, so it is no member of the other group, and a foreign record
// there.
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
	}), partitiontest.WithMovedMembership(func(t *testing.T, m partition.Member, to string) {
		c, client := newCoordinator(t, newClient(t, []string{b.URL})), newClient(t, []string{b.URL})
		own := c.EtcdKey(fmt.Sprintf("#members/%s#%016x#%s", m.Group, m.Epoch, m.ID))
		get, err := client.Get(ctx(t), own)
		if err != nil || len(get.Kvs) != 1 {
			t.Fatalf("Get(%s) = %v, %v; want the membership key", own, get, err)
		}
		moved := c.EtcdKey(fmt.Sprintf("#members/%s#%016x#%s", to, m.Epoch, m.ID))
		if _, err := client.Put(ctx(t), moved, string(get.Kvs[0].Value), clientv3.WithLease(clientv3.LeaseID(m.Epoch))); err != nil {
			t.Fatalf("put %s on the lease of %s by hand: %v", moved, m, err)
		}
	}, true), partitiontest.WithOwnerByHand(func(t *testing.T, group, name string, owner partition.Member) {
		c, client := newCoordinator(t, newClient(t, []string{b.URL})), newClient(t, []string{b.URL})
		key := c.EtcdKey(partition.Key(group, name))
		if _, err := client.Put(ctx(t), key, owner.ID, clientv3.WithLease(clientv3.LeaseID(owner.Epoch))); err != nil {
			t.Fatalf("put %s on the lease of %s by hand: %v", key, owner, err)
		}
	}), partitiontest.WithIgnoredEdit(func(t *testing.T, m partition.Member, _ tenure.Grant) {
		c, client := newCoordinator(t, newClient(t, []string{b.URL})), newClient(t, []string{b.URL})
		own := c.EtcdKey(fmt.Sprintf("#members/%s#%016x#%s", m.Group, m.Epoch, m.ID))
		if _, err := client.Put(ctx(t), own, "1 "+strconv.Itoa(m.Partitions), clientv3.WithLease(clientv3.LeaseID(m.Epoch))); err != nil {
			t.Fatalf("put %s with a TTL of 1 s on the lease of %s by hand: %v", own, m, err)
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
