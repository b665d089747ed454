package etcd_test

import (
	"context"
	"errors"
	"sync/atomic"
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

// regrantBeforePut returns hooks that, once armed, hold the next
// transaction of which lease finds the lease (a put on a lease just
// granted, carrying nothing yet) until another program, through cl, has
// revoked that lease and granted its ID again for secs seconds: what a
// program that lists leases (etcdctl lease list) can do between a grant
// and its first put.
func regrantBeforePut(t *testing.T, cl *clientv3.Client, armed *atomic.Bool, secs int64, lease func(req any) (clientv3.LeaseID, bool)) rpcHooks {
	return rpcHooks{call: func(ctx context.Context, method string, req any) error {
		if method != rpcTxn {
			return nil
		}
		l, ok := lease(req)
		if !ok || !armed.CompareAndSwap(true, false) {
			return nil
		}
		if _, err := cl.Revoke(ctx, l); err != nil {
			t.Errorf("revoke lease %x before its first put: %v", int64(l), err)
		}
		if _, err := pb.NewLeaseClient(cl.ActiveConnection()).LeaseGrant(ctx, &pb.LeaseGrantRequest{ID: int64(l), TTL: secs}); err != nil {
			t.Errorf("grant lease %x again for %ds: %v", int64(l), secs, err)
		}
		return nil
	}}
}

// TestJoinGroupOnALeaseRegrantedBeforeItsPut: between JoinGroup's lease
// grant and its transaction, another program revokes the lease (it
// carries nothing yet: no record is removed) and grants its ID again, for
// etcd's minimum TTL or for the TTL JoinGroup was granted. JoinGroup must
// not hand out a membership on a lease shorter than the TTL it reports: a
// joins for 5s and claims g/0; until a.Sent + a.TTL, b's claim of g/0 must
// be refused. On the shorter lease JoinGroup refuses (and a later
// JoinGroup of a is a good one); on a lease granted again for the same TTL,
// which began later, it is a good membership.
//
// Red without joinCheck's comparison of the granted TTL:
//
//	shorter: JoinGroup(g, a#1) on a lease granted again for 1s = "a#1" in "g" (epoch …, ttl 5s); want refused
//	b's claim of g/0 = {Grant:g/0@6 by "b#1" (ttl 1m0s) Err:<nil>}, 2.6s before a's membership "a#1" in "g" (epoch …, ttl 5s) ends (a owns g/0@3 by "a#1" (ttl 5s)): two owners at once
func TestJoinGroupOnALeaseRegrantedBeforeItsPut(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		secs    int64 // the TTL the lease's ID is granted again for
		refused bool
	}{
		{name: "shorter", secs: 1, refused: true},
		{name: "same TTL", secs: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			eps := startEtcd(t)
			plain := newClient(t, eps)
			judge := newCoordinator(t, plain)
			var armed atomic.Bool
			c := newCoordinator(t, hookedClient(t, eps, regrantBeforePut(t, plain, &armed, tc.secs, func(req any) (clientv3.LeaseID, bool) {
				return joinTxnLease(req, "g")
			})))
			armed.Store(true)
			a, err := c.JoinGroup(ctx(t), "g", "a#1", 5*time.Second, 1)
			if armed.Load() {
				t.Fatalf("JoinGroup(g, a#1) = %v, %v; the lease was never granted again: no membership transaction", a, err)
			}
			switch {
			case tc.refused && err == nil:
				t.Logf("JoinGroup(g, a#1) on a lease granted again for %ds = %s; want refused", tc.secs, a)
			case tc.refused:
				t.Logf("JoinGroup(g, a#1) on a lease granted again for %ds = %v", tc.secs, err)
				a = mustJoin(t, c, "g", "a#1", 5*time.Second) // nothing armed: a good membership
			case err != nil:
				t.Fatalf("JoinGroup(g, a#1) on a lease granted again for its own TTL = %v; want a membership", err)
			}
			ga := mustClaim(t, c, a, "0")[0]
			b := mustJoin(t, judge, "g", "b#1", time.Minute)
			ends := a.Sent.Add(a.TTL)
			for ends.Until() > 0 {
				res, err := judge.ClaimPartitions(ctx(t), b, []string{"0"})
				if err != nil {
					t.Fatal(err)
				}
				var held *tenure.HeldError
				if !errors.As(res[0].Err, &held) {
					t.Fatalf("b's claim of g/0 = %+v, %s before a's membership %s ends (a owns %s): two owners at once", res[0], ends.Until().Round(100*time.Millisecond), a, ga)
				}
				time.Sleep(200 * time.Millisecond)
			}
		})
	}
}
