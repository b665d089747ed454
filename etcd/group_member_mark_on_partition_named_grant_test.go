package etcd_test

import (
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestMembershipAndMarkOnTheLeaseOfAGrantNamedLikeAPartition: a membership
// key of group h and its mark, both put by hand on the lease of a single
// key's grant whose key is named like a partition of h ("h/x"), are no
// member of h, as on any other grant's lease (see
// TestMembershipAndMarkOfAnotherGroupOnALiveLease): the grant's key,
// written before the mark, shows that the lease was the grant's first,
// though a member's lease carries its partitions under "h/" too.
func TestMembershipAndMarkOnTheLeaseOfAGrantNamedLikeAPartition(t *testing.T) {
	t.Parallel()
	client := newClient(t, startEtcd(t))
	c := newCoordinator(t, client)
	if _, err := c.Acquire(ctx(t), "h/x", "h1", time.Minute); err != nil {
		t.Fatal(err)
	}
	get, err := client.Get(ctx(t), c.EtcdKey("h/x"))
	if err != nil || len(get.Kvs) != 1 {
		t.Fatalf("Get(h/x) = %v, %v", get, err)
	}
	l := clientv3.LeaseID(get.Kvs[0].Lease)
	mark := c.EtcdKey(fmt.Sprintf("#members/h#%016x", uint64(l)))
	if _, err := client.Txn(ctx(t)).Then(
		clientv3.OpPut(mark+"#phantom#1", "60 4", clientv3.WithLease(l)),
		clientv3.OpPut(mark, "phantom#1", clientv3.WithLease(l)),
	).Commit(); err != nil {
		t.Fatal(err)
	}
	if ms, err := c.GroupMembers(ctx(t), "h"); err != nil || len(ms) != 0 {
		t.Errorf("GroupMembers(h) = %s, %v; want none", memberSet(ms), err)
	}
	if rs, err := c.ListForeign(ctx(t), "h"); err != nil || len(rs) != 2 {
		t.Errorf("ListForeign(h) = %+v, %v; want phantom#1's membership key and mark", rs, err)
	}
}
