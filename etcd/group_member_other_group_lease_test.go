//go:build openfinding

package etcd_test

import (
	"fmt"
	"strings"
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
// it and RemoveForeign deletes it; g's member stays.
func TestMembershipOfAnotherGroupOnAMembersLease(t *testing.T) {
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
	if ms, err := c.GroupMembers(ctx(t), "h"); err != nil || len(ms) != 0 {
		t.Errorf("GroupMembers(h) = %s, %v; want none", memberSet(ms), err)
	}
	rs, err := c.ListForeign(ctx(t), "h")
	if err != nil || len(rs) != 1 || rs[0].Member != "phantom#1" || !strings.Contains(rs[0].Reason, "carries another membership") {
		t.Fatalf("ListForeign(h) = %+v, %v; want phantom#1's membership key, on a lease that carries another membership", rs, err)
	}
	if removed, err := c.RemoveForeign(ctx(t), rs[0]); !removed || err != nil {
		t.Errorf("RemoveForeign(%+v) = %t, %v; want it removed", rs[0], removed, err)
	}
	if ms, err := c.GroupMembers(ctx(t), "g"); err != nil || len(ms) != 1 || ms[0].Epoch != m.Epoch {
		t.Errorf("GroupMembers(g) after RemoveForeign = %s, %v; want live#1 still", memberSet(ms), err)
	}
}
