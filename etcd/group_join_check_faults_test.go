package etcd_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure/etcd"
	"github.com/tenure-dev/tenure/internal/tcpproxy"
	"github.com/tenure-dev/tenure/partition"
)

// The gRPC methods of JoinGroup's check and of its revoke.
const (
	rpcTimeToLive = "/etcdserverpb.Lease/LeaseTimeToLive"
	rpcRevoke     = "/etcdserverpb.Lease/LeaseRevoke"
)

// joinTxnLease returns the lease of the membership put in transaction req
// of JoinGroup in group, if req is one.
func joinTxnLease(req any, group string) (clientv3.LeaseID, bool) {
	r, ok := req.(*pb.TxnRequest)
	if !ok {
		return 0, false
	}
	for _, op := range r.Success {
		if p := op.GetRequestPut(); p != nil && p.Lease != 0 && strings.Contains(string(p.Key), "#members/"+group+"#") {
			return clientv3.LeaseID(p.Lease), true
		}
	}
	return 0, false
}

// TestJoinGroupCheckFaults: JoinGroup's transaction, which puts the
// membership key and mark on the lease it has just granted, is answered;
// then the check that nothing else rides on that lease (its
// LeaseTimeToLive, and the reads after it) meets a fault in tenure's proxy:
// its request held or its reply held past the call's deadline, the link
// cut, a foreign key put on the lease while its request is held, or that
// and the revoke that follows cut off. JoinGroup either returns an error
// or a good membership, and:
//
//   - a good membership is listed by GroupMembers (of a coordinator that
//     has judged nothing before), renews, and its lease carries its
//     membership key and mark and nothing else;
//   - after an error, what it left behind is no member that a group
//     listing counts as live and renewing: once the link heals its lease
//     is revoked or nobody extends it (its TTL left is no more than the
//     TTL granted less the time since the grant was sent), it is gone
//     from GroupMembers by the grant's send plus its TTL, and a later
//     JoinGroup of the same ID is the one member of it listed then.
//
// A control case delays the check's request within the deadline: a good
// membership.
//
// Red when JoinGroup treated a failed check as clean (kept the membership
// whatever the check's error):
//
//	foreign key put while the request is held, then the link cut: JoinGroup("joincheck5", "m#1") = "m#1" in "joincheck5" (epoch …, ttl 3s); its lease carries [".../#members/joincheck5#<lease>" ".../#members/joincheck5#<lease>#m#1" "stranger/joincheck5"]: a key it does not own
//
// and when it judged its lease by firstOnLease alone (a key created after
// the mark passes), in both other cases of a foreign key.
func TestJoinGroupCheckFaults(t *testing.T) {
	t.Parallel()
	eps := startEtcd(t)
	plain := newClient(t, eps)
	const ttl = 3 * time.Second
	type env struct {
		p       *tcpproxy.Proxy
		lease   clientv3.LeaseID
		foreign string // a key never written before, of this case alone
	}
	putForeign := func(t *testing.T, e env, then func()) {
		// The check's request waits in the proxy (Up is held) while
		// another program puts a key on the lease; then it goes on, or
		// the link is cut.
		go func() {
			if _, err := plain.Put(context.Background(), e.foreign, "x#1", clientv3.WithLease(e.lease)); err != nil {
				t.Errorf("put a foreign key on lease %x: %v", int64(e.lease), err)
			}
			then()
		}()
	}
	for i, tc := range []struct {
		name     string
		fault    func(t *testing.T, e env)
		cutAt    string // a method whose call cuts the link once the fault fired
		succeeds bool   // the fault only delays the check: a good membership
	}{
		{name: "request delayed within the deadline", succeeds: true, fault: func(_ *testing.T, e env) {
			e.p.Hold(tcpproxy.Up)
			time.AfterFunc(300*time.Millisecond, func() { e.p.Release(tcpproxy.Up) })
		}},
		{name: "request held", fault: func(_ *testing.T, e env) { e.p.Hold(tcpproxy.Up) }},
		{name: "reply held", fault: func(_ *testing.T, e env) { e.p.Hold(tcpproxy.Down) }},
		{name: "link cut", fault: func(_ *testing.T, e env) { e.p.Cut() }},
		{name: "foreign key put while the request is held", fault: func(t *testing.T, e env) {
			e.p.Hold(tcpproxy.Up)
			putForeign(t, e, func() { e.p.Release(tcpproxy.Up) })
		}},
		{name: "foreign key put while the request is held, then the link cut", fault: func(t *testing.T, e env) {
			e.p.Hold(tcpproxy.Up)
			putForeign(t, e, e.p.Cut)
		}},
		{name: "foreign key put while the request is held, revoke cut off", cutAt: rpcRevoke, fault: func(t *testing.T, e env) {
			e.p.Hold(tcpproxy.Up)
			putForeign(t, e, func() { e.p.Release(tcpproxy.Up) })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			group, id := fmt.Sprintf("joincheck%d", i), "m#1"
			var armed, fired atomic.Bool
			var e env
			var mu sync.Mutex
			var after []string // the methods called once the fault fired
			var p *tcpproxy.Proxy
			var cl *clientv3.Client
			cl, p = proxiedClient(t, eps, rpcHooks{
				call: func(_ context.Context, method string, _ any) error {
					if !fired.Load() {
						return nil
					}
					mu.Lock()
					after = append(after, method)
					mu.Unlock()
					if tc.cutAt != "" && method == tc.cutAt {
						p.Cut()
					}
					return nil
				},
				reply: func(method string, _ stamp, req, _ any, err error) error {
					if method != rpcTxn || err != nil {
						return err
					}
					if l, ok := joinTxnLease(req, group); ok && armed.CompareAndSwap(true, false) {
						e.lease, e.p, e.foreign = l, p, "stranger/"+group
						fired.Store(true)
						tc.fault(t, e) // before the client sends the check
					}
					return err
				},
			})
			c := newCoordinator(t, cl)
			armed.Store(true)
			start := time.Now() // before the grant's send
			call, cancel := context.WithTimeout(context.Background(), time.Second)
			m, err := c.JoinGroup(call, group, id, ttl, 2)
			cancel()
			if !fired.Load() {
				t.Fatalf("JoinGroup(%q, %q) = %v, %v; the fault never fired: no membership transaction was answered", group, id, m, err)
			}
			mu.Lock()
			checked := slices.Contains(after, rpcTimeToLive)
			calls := slices.Clone(after)
			mu.Unlock()
			if !checked {
				t.Fatalf("JoinGroup(%q, %q) = %v, %v; calls after its transaction %v: no check of its lease met the fault", group, id, m, err, calls)
			}
			if tc.cutAt != "" && !slices.Contains(calls, tc.cutAt) {
				t.Fatalf("JoinGroup(%q, %q) = %v, %v; calls after its transaction %v: no %s to cut off", group, id, m, err, calls, tc.cutAt)
			}
			p.Heal()
			judge := newCoordinator(t, plain) // judges every mark afresh
			listed := func() []partition.Member {
				ms, err := judge.GroupMembers(ctx(t), group)
				if err != nil {
					t.Fatalf("GroupMembers(%q) = %v", group, err)
				}
				return ms
			}
			if err == nil {
				if !tc.succeeds {
					t.Logf("JoinGroup(%q, %q) with the check's %s = %s: a membership (calls after its transaction: %v)", group, id, tc.name, m, calls)
				}
				wantGoodMember(t, c, plain, listed(), m)
				return
			}
			if tc.succeeds {
				t.Errorf("JoinGroup(%q, %q) with the check's %s = %v; want a membership: the fault only delays the check", group, id, tc.name, err)
			}
			t.Logf("JoinGroup(%q, %q) with the check's %s = %v", group, id, tc.name, err)
			// What was left: revoked, or a lease that nobody extends.
			r, lerr := plain.TimeToLive(ctx(t), e.lease)
			if lerr == nil && r.TTL > 0 {
				if left, most := time.Duration(r.TTL)*time.Second, time.Duration(r.GrantedTTL)*time.Second-time.Since(start); left > most+time.Second {
					t.Errorf("after JoinGroup failed (%v), its lease %x has %s left of %ds: more than the %s since its grant allows; it was extended", err, int64(e.lease), left, r.GrantedTTL, most)
				}
			}
			// A later JoinGroup of the same ID is a good membership. It lives
			// a minute: nothing renews it while the failed one's lease
			// expires (on a loaded machine, a 3 s membership expired before
			// it was judged).
			later := mustJoin(t, judge, group, id, time.Minute)
			if later.Epoch == uint64(e.lease) {
				t.Fatalf("the later JoinGroup(%q, %q) = %s: on the failed JoinGroup's lease", group, id, later)
			}
			// By the failed grant's send plus its TTL (and etcd's expiry
			// sweep), only the later membership is listed.
			waitFor(t, ttl+5*time.Second, "the failed membership's lease to expire", func() bool {
				r, err := plain.TimeToLive(ctx(t), e.lease)
				return err == nil && r.TTL == -1
			})
			if late := time.Since(start) - ttl; late > 3*time.Second {
				t.Logf("the failed membership's lease outlived its TTL by %s (etcd's expiry sweep, a loaded machine)", late)
			}
			wantGoodMember(t, judge, plain, listed(), later)
		})
	}
}

// wantGoodMember fails the test unless m is a good membership: ms (a group
// listing) has m and no other membership of its ID, c renews it, and its
// lease carries its membership key and mark and nothing else.
func wantGoodMember(t *testing.T, c *etcd.Coordinator, cl *clientv3.Client, ms []partition.Member, m partition.Member) {
	t.Helper()
	var same []uint64
	for _, o := range ms {
		if o.ID == m.ID {
			same = append(same, o.Epoch)
		}
	}
	if len(same) != 1 || same[0] != m.Epoch {
		t.Errorf("JoinGroup(%q, %q) = %s; GroupMembers lists the memberships of %q on leases %x: want only its own", m.Group, m.ID, m, m.ID, same)
	}
	if _, err := c.RenewMember(ctx(t), m); err != nil {
		t.Errorf("RenewMember(%s) = %v; want renewed", m, err)
	}
	r, err := cl.TimeToLive(ctx(t), clientv3.LeaseID(m.Epoch), clientv3.WithAttachedKeys())
	if err != nil {
		t.Fatalf("the keys on lease %x: %v", m.Epoch, err)
	}
	key, mark := memberEtcdKeys(c, m)
	var keys []string
	for _, k := range r.Keys {
		keys = append(keys, string(k))
	}
	slices.Sort(keys)
	if want := []string{mark, key}; !slices.Equal(keys, want) {
		t.Errorf("JoinGroup(%q, %q) = %s; its lease carries %q: a key it does not own (want %q)", m.Group, m.ID, m, keys, want)
	}
}
