package etcd_test

import (
	"errors"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
)

// TestMemberLeaseRevokedAndRegrantedByID: an operator revokes member a's
// lease, b claims a's partition, and then the lease is granted again by
// hand under the same ID (etcd's LeaseGrant takes an ID) with a's
// membership key and mark put back on it exactly as JoinGroup wrote them.
// a's RenewMember renews (the records are as a wrote them), but a does
// not get its partition back: CheckPartitions reports a's grant lost (its
// key went with the revoke, and b's rides on b's lease), a's claim of it
// is refused with b's token, b keeps it, and once b releases it a claims
// it with a token above b's: no token repeats and no partition has two
// owners at etcd. It passed when written.
func TestMemberLeaseRevokedAndRegrantedByID(t *testing.T) {
	t.Parallel()
	client := newClient(t, startEtcd(t))
	c := newCoordinator(t, client)
	a := mustJoin(t, c, "g", "a#1", time.Minute)
	ga := mustClaim(t, c, a, "0")[0]
	key, mark := memberEtcdKeys(c, a)
	value, err := client.Get(ctx(t), key)
	if err != nil || len(value.Kvs) != 1 {
		t.Fatalf("Get(a's membership key) = %v, %v", value, err)
	}
	if _, err := client.Revoke(ctx(t), clientv3.LeaseID(a.Epoch)); err != nil {
		t.Fatal(err)
	}
	b := mustJoin(t, c, "g", "b#1", time.Minute)
	gb := mustClaim(t, c, b, "0")[0]
	if gb.Token <= ga.Token {
		t.Fatalf("b's claim after a's lease was revoked: token %d; want > %d, a's", gb.Token, ga.Token)
	}
	// The same lease ID again, and a's records back on it.
	if _, err := pb.NewLeaseClient(client.ActiveConnection()).LeaseGrant(ctx(t), &pb.LeaseGrantRequest{ID: int64(a.Epoch), TTL: 60}); err != nil {
		t.Fatal(err)
	}
	on := clientv3.WithLease(clientv3.LeaseID(a.Epoch))
	if _, err := client.Txn(ctx(t)).Then(
		clientv3.OpPut(key, string(value.Kvs[0].Value), on),
		clientv3.OpPut(mark, a.ID, on),
	).Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RenewMember(ctx(t), a); err != nil {
		t.Errorf("RenewMember(a) on the lease granted again = %v; want renewed (its records are as a wrote them)", err)
	}
	if lost, err := c.CheckPartitions(ctx(t), a, []tenure.Grant{ga}); err != nil || len(lost) != 1 {
		t.Errorf("CheckPartitions(a, %s) on the lease granted again = %v, %v; want it lost", ga, lost, err)
	}
	res, err := c.ClaimPartitions(ctx(t), a, []string{"0"})
	if err != nil {
		t.Fatal(err)
	}
	var he *tenure.HeldError
	if !errors.As(res[0].Err, &he) || he.Token != gb.Token {
		t.Errorf("a's claim of g/0 on the lease granted again = %+v, %v; want refused with b's token %d", res, err, gb.Token)
	}
	if table, err := c.GroupPartitions(ctx(t), "g"); err != nil || len(table) != 1 || table[0].Token != gb.Token || table[0].Holder != b.ID {
		t.Errorf("GroupPartitions(g) = %v, %v; want b's grant, token %d", table, err, gb.Token)
	}
	if err := c.ReleasePartitions(ctx(t), b, []tenure.Grant{gb}); err != nil {
		t.Fatal(err)
	}
	if g := mustClaim(t, c, a, "0")[0]; g.Token <= gb.Token {
		t.Errorf("a's claim after b released g/0: token %d; want > %d, b's", g.Token, gb.Token)
	}
}
