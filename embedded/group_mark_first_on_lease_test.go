package embedded_test

import (
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure/etcd"
)

// TestForgedMembershipOnAMembersLeaseIsNoMember: on the embedded server,
// a membership key of group h and its mark, put by hand in one
// transaction (as JoinGroup writes them) on the lease of a live member of
// group g, are no member of h but two records that ListForeign lists and
// RemoveForeign deletes, leaving g's member: the server lists the keys on
// a lease as the Debian etcd binary does (see the etcd package's
// TestMembershipAndMarkOfAnotherGroupOnALiveLease).
func TestForgedMembershipOnAMembersLeaseIsNoMember(t *testing.T) {
	cl := client(t, start(t, localConfig(t)).Endpoints())
	c, err := etcd.New(cl)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	m, err := c.JoinGroup(ctx(t), "g", "live#1", time.Minute, 4)
	if err != nil {
		t.Fatal(err)
	}
	l := clientv3.LeaseID(m.Epoch)
	mark := c.EtcdKey(fmt.Sprintf("#members/h#%016x", uint64(l)))
	if _, err := cl.Txn(ctx(t)).Then(
		clientv3.OpPut(mark+"#phantom#1", "60 4", clientv3.WithLease(l)),
		clientv3.OpPut(mark, "phantom#1", clientv3.WithLease(l)),
	).Commit(); err != nil {
		t.Fatal(err)
	}
	if ms, err := c.GroupMembers(ctx(t), "h"); err != nil || len(ms) != 0 {
		t.Errorf("GroupMembers(h) = %v, %v; want none", ms, err)
	}
	rs, err := c.ListForeign(ctx(t), "h")
	if err != nil || len(rs) != 2 || rs[0].Member != "phantom#1" {
		t.Fatalf("ListForeign(h) = %+v, %v; want phantom#1's membership key and mark", rs, err)
	}
	if removed, err := c.RemoveForeign(ctx(t), rs[0]); !removed || err != nil {
		t.Errorf("RemoveForeign(%+v) = %t, %v; want it removed", rs[0], removed, err)
	}
	if rs, err := c.ListForeign(ctx(t), ""); err != nil || len(rs) != 0 {
		t.Errorf("ListForeign() after RemoveForeign = %+v, %v; want none", rs, err)
	}
	if ms, err := c.GroupMembers(ctx(t), "g"); err != nil || len(ms) != 1 || ms[0].Epoch != m.Epoch {
		t.Errorf("GroupMembers(g) after RemoveForeign = %v, %v; want live#1 still", ms, err)
	}
}
