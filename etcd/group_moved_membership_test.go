//go:build openfinding

package etcd_test

import (
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure/internal/etcdbin"
	"github.com/tenure-dev/tenure/partition"
	"github.com/tenure-dev/tenure/partition/partitiontest"
)

// TestGroupConformanceMovedMembership runs the partition group suite on the
// Debian etcd binary with the MovedMembership check: a membership is moved
// to another group by hand as etcdctl put would, a copy of its membership
// key under the other group put on its lease. Its member stays a member of
// its own group (kept): the copy is no member of the other group, and a
// foreign record there. Once it passes, its hook joins
// TestGroupConformanceEtcdBinary.
func TestGroupConformanceMovedMembership(t *testing.T) {
	t.Parallel()
	b := etcdbin.New(t)
	partitiontest.Run(t, func(t *testing.T) partition.Coordinator {
		return newCoordinator(t, newClient(t, []string{b.URL}))
	}, partitiontest.WithTTL(2*time.Second), partitiontest.WithMovedMembership(func(t *testing.T, m partition.Member, to string) {
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
	}, true))
}
