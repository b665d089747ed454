package etcd_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestJoinGroupOnALeaseRegrantedBeforeItsCheck: JoinGroup's transaction
// has put the membership key and mark on its lease; before its check
// (the LeaseTimeToLive that lists the keys on the lease) is sent, another
// program revokes that lease, which deletes both keys, and grants its ID
// again for the same TTL. JoinGroup promises that a membership it returns
// carried its two keys and no other when it was checked: this one carried
// none, so it must be refused. (A membership handed out on it is no
// member to any other coordinator, and its claims ride a lease that holds
// no membership.)
func TestJoinGroupOnALeaseRegrantedBeforeItsCheck(t *testing.T) {
	t.Parallel()
	eps := startEtcd(t)
	plain := newClient(t, eps)
	const ttl = 5 * time.Second
	var joined atomic.Int64 // the lease JoinGroup's transaction put on
	var armed atomic.Bool
	c := newCoordinator(t, hookedClient(t, eps, rpcHooks{call: func(ctx context.Context, method string, req any) error {
		if l, ok := joinTxnLease(req, "g"); ok && method == rpcTxn {
			joined.Store(int64(l))
			return nil
		}
		r, ok := req.(*pb.LeaseTimeToLiveRequest)
		if method != rpcTimeToLive || !ok || r.ID == 0 || r.ID != joined.Load() || !armed.CompareAndSwap(true, false) {
			return nil
		}
		if _, err := plain.Revoke(ctx, clientv3.LeaseID(r.ID)); err != nil {
			t.Errorf("revoke lease %x before JoinGroup's check: %v", r.ID, err)
		}
		if _, err := pb.NewLeaseClient(plain.ActiveConnection()).LeaseGrant(ctx, &pb.LeaseGrantRequest{ID: r.ID, TTL: int64(ttl / time.Second)}); err != nil {
			t.Errorf("grant lease %x again for %s: %v", r.ID, ttl, err)
		}
		return nil
	}}))
	armed.Store(true)
	m, err := c.JoinGroup(ctx(t), "g", "a#1", ttl, 1)
	if armed.Load() {
		t.Fatalf("JoinGroup(g, a#1) = %v, %v; its check was never sent", m, err)
	}
	if err != nil {
		t.Logf("JoinGroup(g, a#1) on a lease revoked before its check = %v", err)
		return
	}
	t.Errorf("JoinGroup(g, a#1) = %s on a lease that carried none of its keys when checked; want refused", m)
	other := newCoordinator(t, plain)
	if ms, err := other.GroupMembers(ctx(t), "g"); err == nil {
		t.Logf("GroupMembers(g) on another coordinator = %v", ms)
	}
	if res, err := c.ClaimPartitions(ctx(t), m, []string{"0"}); err == nil {
		t.Logf("ClaimPartitions(a, 0) = %+v", res)
	}
	if _, err := c.RenewMember(ctx(t), m); err != nil {
		t.Logf("RenewMember(a) = %v", err)
	}
}
