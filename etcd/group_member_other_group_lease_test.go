package etcd_test

import (
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestMembershipOfAnotherGroupOnAMembersLease: a membership key of group h
// put by hand on the lease of a live member of group g, naming that lease,
// is no member of h: JoinGroup puts one membership key on each lease it
// grants, and that lease's is g's. Were it a member, partitions of h would
// be assigned to an ID no process runs for as long as g's member renews,
// and release --force --member could not remove it. ListForeign(h) lists
// it and RemoveForeign deletes it; g's member stays. The same for one put
// on the lease of a plain grant, which carries no membership key at all.
func TestMembershipOfAnotherGroupOnAMembersLease(t *testing.T) {
	t.Parallel()
	client := newClient(t, startEtcd(t))
	c := newCoordinator(t, client)
	m, err := c.JoinGroup(ctx(t), "g", "live#1", time.Minute, 4)
	if err != nil {
		t.Fatal(err)
	}
	key := c.EtcdKey(fmt.Sprintf("#members/h#%016x#phantom#1", m.Epoch))
	if _, err := client.Put(ctx(t), key, "60 4", clientv3.WithLease(clientv3.LeaseID(m.Epoch))); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Acquire(ctx(t), "k", "h1", time.Minute); err != nil {
		t.Fatal(err)
	}
	get, err := client.Get(ctx(t), c.EtcdKey("k"))
	if err != nil || len(get.Kvs) != 1 {
		t.Fatalf("Get(k) = %v, %v", get, err)
	}
	onGrant := c.EtcdKey(fmt.Sprintf("#members/h#%016x#phantom#2", get.Kvs[0].Lease))
	if _, err := client.Put(ctx(t), onGrant, "60 4", clientv3.WithLease(clientv3.LeaseID(get.Kvs[0].Lease))); err != nil {
		t.Fatal(err)
	}
	if ms, err := c.GroupMembers(ctx(t), "h"); err != nil || len(ms) != 0 {
		t.Errorf("GroupMembers(h) = %s, %v; want none", memberSet(ms), err)
	}
	rs, err := c.ListForeign(ctx(t), "h")
	if err != nil || len(rs) != 2 || rs[0].Member != "phantom#1" || rs[1].Member != "phantom#2" {
		t.Fatalf("ListForeign(h) = %+v, %v; want the membership keys of phantom#1 and phantom#2", rs, err)
	}
	for _, r := range rs {
		if removed, err := c.RemoveForeign(ctx(t), r); !removed || err != nil {
			t.Errorf("RemoveForeign(%+v) = %t, %v; want it removed", r, removed, err)
		}
	}
	if ms, err := c.GroupMembers(ctx(t), "g"); err != nil || len(ms) != 1 || ms[0].Epoch != m.Epoch {
		t.Errorf("GroupMembers(g) after RemoveForeign = %s, %v; want live#1 still", memberSet(ms), err)
	}
}
