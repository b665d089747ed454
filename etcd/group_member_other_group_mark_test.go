package etcd_test

import (
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestMembershipAndMarkOfAnotherGroupOnALiveLease: a membership key of
// group h and its mark, both put by hand, as JoinGroup writes them, on the
// lease of a live member of group g (or of a plain grant), are no member
// of h: JoinGroup puts its two keys on a lease it has just granted, so a
// lease that carried a member of another group, or a grant, before them
// is none of h's members. Were it a member, h's partitions would be
// assigned to an ID that no process runs, for as long as g's member (or the
// grant's holder) renews, and release --force --member could not remove
// it. ListForeign(h) lists both records, RemoveForeign deletes them, and
// g's member and the grant stay.
func TestMembershipAndMarkOfAnotherGroupOnALiveLease(t *testing.T) {
	t.Parallel()
	client := newClient(t, startEtcd(t))
	c := newCoordinator(t, client)
	m, err := c.JoinGroup(ctx(t), "g", "live#1", time.Minute, 4)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Acquire(ctx(t), "k", "h1", time.Minute); err != nil {
		t.Fatal(err)
	}
	get, err := client.Get(ctx(t), c.EtcdKey("k"))
	if err != nil || len(get.Kvs) != 1 {
		t.Fatalf("Get(k) = %v, %v", get, err)
	}
	forge := func(l clientv3.LeaseID, id string) {
		t.Helper()
		mark := c.EtcdKey(fmt.Sprintf("#members/h#%016x", uint64(l)))
		_, err := client.Txn(ctx(t)).Then(
			clientv3.OpPut(mark+"#"+id, "60 4", clientv3.WithLease(l)),
			clientv3.OpPut(mark, id, clientv3.WithLease(l)),
		).Commit()
		if err != nil {
			t.Fatal(err)
		}
	}
	forge(clientv3.LeaseID(m.Epoch), "phantom#1")
	forge(clientv3.LeaseID(get.Kvs[0].Lease), "phantom#2")
	if ms, err := c.GroupMembers(ctx(t), "h"); err != nil || len(ms) != 0 {
		t.Errorf("GroupMembers(h) = %s, %v; want none", memberSet(ms), err)
	}
	rs, err := c.ListForeign(ctx(t), "h")
	if err != nil || len(rs) != 4 {
		t.Fatalf("ListForeign(h) = %+v, %v; want the membership keys and marks of phantom#1 and phantom#2", rs, err)
	}
	removed := map[string]bool{}
	for _, r := range rs { // a member's key and mark, written together, go together
		ok, err := c.RemoveForeign(ctx(t), r)
		if err != nil {
			t.Fatal(err)
		}
		removed[r.Member] = removed[r.Member] || ok
	}
	if !removed["phantom#1"] || !removed["phantom#2"] {
		t.Errorf("RemoveForeign of %+v removed %v; want both phantoms removed", rs, removed)
	}
	if rs, err := c.ListForeign(ctx(t), ""); err != nil || len(rs) != 0 {
		t.Errorf("ListForeign() after RemoveForeign = %+v, %v; want none", rs, err)
	}
	if ms, err := c.GroupMembers(ctx(t), "g"); err != nil || len(ms) != 1 || ms[0].Epoch != m.Epoch {
		t.Errorf("GroupMembers(g) after RemoveForeign = %s, %v; want live#1 still", memberSet(ms), err)
	}
	if l, ok, err := c.Leader(ctx(t), "k"); err != nil || !ok || l.Holder != "h1" {
		t.Errorf("Leader(k) after RemoveForeign = %+v, %t, %v; want h1's grant", l, ok, err)
	}
}
