package etcd_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
)

// TestJoinOnALeaseWrittenBeforeItsMark: another program puts a key on the
// lease JoinGroup has just granted, before JoinGroup's transaction puts the
// membership key and mark on it (the transaction's request is delayed
// until that put is done). The membership is then no member (its mark was
// not the first write on its lease: see firstOnLease), so a process that
// went on with it would renew a lease that no member counts, run no
// partition, and be listed as foreign while it runs. JoinGroup must not
// hand such a membership out: it either returns a member that
// GroupMembers lists, or an error; and RenewMember of what it returned
// agrees with GroupMembers.
func TestJoinOnALeaseWrittenBeforeItsMark(t *testing.T) {
	t.Parallel()
	eps := startEtcd(t)
	plain := newClient(t, eps)
	var armed atomic.Bool
	cl := hookedClient(t, eps, rpcHooks{call: func(ctx context.Context, method string, req any) error {
		r, ok := req.(*pb.TxnRequest)
		if !ok || method != rpcTxn || !armed.Load() {
			return nil
		}
		for _, op := range r.Success {
			p := op.GetRequestPut()
			if p == nil || p.Lease == 0 || !strings.Contains(string(p.Key), "#members/g#") || !armed.CompareAndSwap(true, false) {
				continue
			}
			if _, err := plain.Put(ctx, "stray", "x#1", clientv3.WithLease(clientv3.LeaseID(p.Lease))); err != nil {
				return err
			}
			break
		}
		return nil
	}})
	c := newCoordinator(t, cl)
	armed.Store(true)
	m, err := c.JoinGroup(ctx(t), "g", "a#1", time.Minute, 2)
	if armed.Load() {
		t.Fatal("the hook never saw JoinGroup's transaction")
	}
	if err != nil {
		// Refused: nothing of it is left.
		ms, merr := c.GroupMembers(ctx(t), "g")
		rs, ferr := c.ListForeign(ctx(t), "")
		if merr != nil || ferr != nil || len(ms) != 0 || len(rs) != 0 {
			t.Errorf("after JoinGroup was refused (%v): GroupMembers(g) = %s, %v; ListForeign() = %+v, %v; want nothing left", err, memberSet(ms), merr, rs, ferr)
		}
		return
	}
	ms, err := c.GroupMembers(ctx(t), "g")
	if err != nil {
		t.Fatal(err)
	}
	listed := len(ms) == 1 && ms[0].Epoch == m.Epoch
	if !listed {
		t.Errorf("JoinGroup(g, a#1) = %s on a lease written before its mark; GroupMembers(g) = %s: a membership no member counts was handed out", m, memberSet(ms))
	}
	_, rerr := c.RenewMember(ctx(t), m)
	if listed != (rerr == nil) || (rerr != nil && !errors.Is(rerr, tenure.ErrLost)) {
		t.Errorf("RenewMember(%s) = %v while GroupMembers lists it: %t; want renewed exactly when listed, ErrLost otherwise", m, rerr, listed)
	}
}
