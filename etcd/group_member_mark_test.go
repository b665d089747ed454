package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/etcd"
)

// TestMembershipWithoutItsMark: a live member whose lease's mark was
// deleted by hand is no member, though its process still renews the
// lease: GroupMembers leaves it out, and GroupPartitions its partition;
// ListForeign lists its membership key (no mark of its lease), and its
// partition key, which no member owns, and RemoveForeign deletes the
// membership key. Its partition key stays on its lease, refused to other
// members' claims, until the lease ends (or it is removed); then it is
// claimed anew.
func TestMembershipWithoutItsMark(t *testing.T) {
	t.Parallel()
	client := newClient(t, startEtcd(t))
	c := newCoordinator(t, client)
	m, err := c.JoinGroup(ctx(t), "g", "live#1", time.Minute, 2)
	if err != nil {
		t.Fatal(err)
	}
	owned, err := c.ClaimPartitions(ctx(t), m, []string{"0"})
	if err != nil || owned[0].Err != nil {
		t.Fatalf("ClaimPartitions(0) = %+v, %v", owned, err)
	}
	if _, err := client.Delete(ctx(t), c.EtcdKey(fmt.Sprintf("#members/g#%016x", m.Epoch))); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RenewMember(ctx(t), m); !errors.Is(err, tenure.ErrLost) {
		t.Errorf("RenewMember() without its mark = %v; want an error wrapping ErrLost: others no longer count it as a member", err)
	}
	if ms, err := c.GroupMembers(ctx(t), "g"); err != nil || len(ms) != 0 {
		t.Errorf("GroupMembers(g) = %s, %v; want none", memberSet(ms), err)
	}
	if gs, err := c.GroupPartitions(ctx(t), "g"); err != nil || len(gs) != 0 {
		t.Errorf("GroupPartitions(g) = %+v, %v; want none", gs, err)
	}
	other, err := c.JoinGroup(ctx(t), "g", "w2", time.Minute, 2)
	if err != nil {
		t.Fatal(err)
	}
	var held *tenure.HeldError
	if res, err := c.ClaimPartitions(ctx(t), other, []string{"0"}); err != nil || !errors.As(res[0].Err, &held) || held.Token != owned[0].Grant.Token {
		t.Errorf("w2's claim of g/0 = %+v, %v; want a *HeldError with token %d", res, err, owned[0].Grant.Token)
	}
	rs, err := c.ListForeign(ctx(t), "g")
	if err != nil || len(rs) != 2 || rs[0].Member != "live#1" || !strings.Contains(rs[0].Reason, "no mark of its lease") ||
		rs[1].Key != "g/0" || rs[1].Member != "" || !strings.Contains(rs[1].Reason, "a partition of a membership that is no member") {
		t.Fatalf("ListForeign(g) = %+v, %v; want live#1's membership key, with no mark of its lease, and its partition g/0", rs, err)
	}
	if removed, err := c.RemoveForeign(ctx(t), rs[0]); !removed || err != nil {
		t.Errorf("RemoveForeign(%+v) = %t, %v; want it removed", rs[0], removed, err)
	}
	if ms, err := c.GroupMembers(ctx(t), "g"); err != nil || len(ms) != 1 || ms[0].ID != "w2" {
		t.Errorf("GroupMembers(g) after RemoveForeign = %s, %v; want w2 alone", memberSet(ms), err)
	}
	if err := c.LeaveGroup(ctx(t), m); err != nil {
		t.Fatal(err)
	}
	if res, err := c.ClaimPartitions(ctx(t), other, []string{"0"}); err != nil || res[0].Err != nil || res[0].Grant.Token <= owned[0].Grant.Token {
		t.Errorf("w2's claim of g/0 after live#1's lease ended = %+v, %v; want a grant with token > %d", res, err, owned[0].Grant.Token)
	}
}

// TestStrayMarks: marks that no member wrote as they stand (one naming an
// ID that has no membership key on its lease, one without a lease, one on
// another lease than it names, ones whose value is no holder identity, one
// whose membership key is no member, one put over a member's own mark) are
// listed by ListForeign with Member set and freed by RemoveForeign, at the
// revision read only. A live member's mark is never listed, and a record
// forged from it removes nothing.
func TestStrayMarks(t *testing.T) {
	t.Parallel()
	client := newClient(t, startEtcd(t))
	c := newCoordinator(t, client)
	live, err := c.JoinGroup(ctx(t), "g", "live#1", time.Minute, 2)
	if err != nil {
		t.Fatal(err)
	}
	hijacked, err := c.JoinGroup(ctx(t), "g", "live#2", time.Minute, 2)
	if err != nil {
		t.Fatal(err)
	}
	grant := func(secs int64) clientv3.LeaseID {
		l, err := client.Grant(ctx(t), secs)
		if err != nil {
			t.Fatal(err)
		}
		return l.ID
	}
	short, other, long := grant(60), grant(60), grant(2*86400)
	put := func(key, value string, l clientv3.LeaseID) {
		t.Helper()
		var opts []clientv3.OpOption
		if l != clientv3.NoLease {
			opts = append(opts, clientv3.WithLease(l))
		}
		if _, err := client.Put(ctx(t), c.EtcdKey(key), value, opts...); err != nil {
			t.Fatal(err)
		}
	}
	mark := func(l clientv3.LeaseID) string { return fmt.Sprintf("#members/g#%016x", uint64(l)) }
	put(mark(short), "phantom#1", short)
	put(mark(0x1234), "phantom#2", clientv3.NoLease)
	put(mark(other), "phantom#3", short)
	put(mark(long), "longer", long)
	put(mark(long)+"#longer", "10 2", long)
	put(mark(grant(60)), "bad\x01id", clientv3.NoLease)
	put(mark(clientv3.LeaseID(hijacked.Epoch)), "phantom#4", clientv3.LeaseID(hijacked.Epoch))
	bare := grant(60)
	put(mark(bare), "", bare)
	// A mark that names no ID is listed under its lease's name.
	bareName := fmt.Sprintf("%016x", uint64(bare))
	want := map[string]string{ // Member → a part of the reason
		"phantom#1": "no membership key of its ID on its lease",
		"phantom#2": "no lease",
		"phantom#3": "not the one its key names",
		"longer":    "longer than tenure grants",
		"bad\x01id": "not a holder identity",
		"phantom#4": "no membership key of its ID on its lease",
		bareName:    "not a holder identity",
	}
	rs, err := c.ListForeign(ctx(t), "g")
	if err != nil {
		t.Fatal(err)
	}
	marks := 0
	for _, r := range rs {
		if !strings.Contains(r.Reason, "membership mark") {
			continue // the membership keys of longer and of live#2
		}
		marks++
		if why, ok := want[r.Member]; !ok || !strings.Contains(r.Reason, why) {
			t.Errorf("ListForeign(g) lists the mark %+v; want the reason to say %q", r, why)
		}
	}
	if marks != len(want) {
		t.Errorf("ListForeign(g) = %+v; want %d marks", rs, len(want))
	}
	removeAll(t, c, rs)
	if rs, err := c.ListForeign(ctx(t), "g"); err != nil || len(rs) != 0 {
		t.Errorf("ListForeign(g) after RemoveForeign = %+v, %v; want none", rs, err)
	}
	if ms, err := c.GroupMembers(ctx(t), "g"); err != nil || len(ms) != 1 || ms[0].Epoch != live.Epoch {
		t.Errorf("GroupMembers(g) after RemoveForeign = %s, %v; want live#1 alone", memberSet(ms), err)
	}
	own, err := client.Get(ctx(t), c.EtcdKey(mark(clientv3.LeaseID(live.Epoch))))
	if err != nil || len(own.Kvs) != 1 {
		t.Fatalf("Get(live#1's mark) = %v, %v", own, err)
	}
	forged := tenure.ForeignRecord{Key: "g", Member: "live#1", Holder: "live#1", Token: uint64(own.Kvs[0].ModRevision)}
	if removed, err := c.RemoveForeign(ctx(t), forged); removed || err != nil {
		t.Errorf("RemoveForeign(a record forged from live#1's mark) = %t, %v; want nothing removed", removed, err)
	}
	if ms, err := c.GroupMembers(ctx(t), "g"); err != nil || len(ms) != 1 || ms[0].Epoch != live.Epoch {
		t.Errorf("GroupMembers(g) after a forged RemoveForeign = %s, %v; want live#1 alone", memberSet(ms), err)
	}
}

// removeAll removes each of rs, checking first that a record one revision
// off removes nothing.
func removeAll(t *testing.T, c *etcd.Coordinator, rs []tenure.ForeignRecord) {
	t.Helper()
	for _, r := range rs {
		stale := r
		stale.Token += 1 << 40
		if removed, err := c.RemoveForeign(ctx(t), stale); removed || err != nil {
			t.Errorf("RemoveForeign(%q at another revision) = %t, %v; want false, nil", r.Member, removed, err)
		}
		if removed, err := c.RemoveForeign(ctx(t), r); !removed || err != nil {
			t.Errorf("RemoveForeign(%+v) = %t, %v; want it removed", r, removed, err)
		}
	}
}

// TestJoinGroupOverAMarkPutAhead: a mark put by hand, without a lease, at
// the name of the lease JoinGroup is then granted is neither overwritten
// nor taken for the joining member's: JoinGroup writes its membership
// only while its lease has no mark, so it fails, writes no membership key,
// revokes the lease, and the group has no member.
func TestJoinGroupOverAMarkPutAhead(t *testing.T) {
	t.Parallel()
	const id = clientv3.LeaseID(0x7e57)
	eps := startEtcd(t)
	client := hookedClient(t, eps, rpcHooks{call: func(_ context.Context, method string, req any) error {
		if g, ok := req.(*pb.LeaseGrantRequest); ok && method == rpcGrant {
			g.ID = int64(id) // etcd grants the lease under this ID
		}
		return nil
	}})
	c := newCoordinator(t, client)
	mark := c.EtcdKey(fmt.Sprintf("#members/g#%016x", uint64(id)))
	if _, err := client.Put(ctx(t), mark, "phantom#1"); err != nil {
		t.Fatal(err)
	}
	if m, err := c.JoinGroup(ctx(t), "g", "w1", time.Minute, 2); err == nil {
		t.Errorf("JoinGroup() over a mark put ahead = %s; want an error", m)
	}
	if get, err := client.Get(ctx(t), mark); err != nil || len(get.Kvs) != 1 || string(get.Kvs[0].Value) != "phantom#1" || get.Kvs[0].Lease != 0 {
		t.Errorf("Get(mark) after JoinGroup = %v, %v; want phantom#1's, without a lease", get, err)
	}
	if get, err := client.Get(ctx(t), c.EtcdKey(fmt.Sprintf("#members/g#%016x#w1", uint64(id)))); err != nil || len(get.Kvs) != 0 {
		t.Errorf("Get(w1's membership key) = %v, %v; want none", get, err)
	}
	if ttl, err := client.TimeToLive(ctx(t), id); err != nil || ttl.TTL != -1 {
		t.Errorf("TimeToLive(the lease granted) = %v, %v; want it revoked (TTL -1)", ttl, err)
	}
	if ms, err := c.GroupMembers(ctx(t), "g"); err != nil || len(ms) != 0 {
		t.Errorf("GroupMembers(g) = %s, %v; want none", memberSet(ms), err)
	}
}

// TestMarkPutAgainAfterItsPartitions: a live member's mark is deleted and
// put back by hand with the same value on the same lease, after the member
// claimed partitions. The mark is then no longer the first write on its
// lease (the partition keys came before it), so GroupMembers no longer
// counts the member; RenewMember must agree, and report the membership
// lost, so that its runner joins again rather than renew a membership no
// member counts while its partitions wait.
func TestMarkPutAgainAfterItsPartitions(t *testing.T) {
	t.Parallel()
	client := newClient(t, startEtcd(t))
	c := newCoordinator(t, client)
	m := mustJoin(t, c, "g", "a#1", time.Minute)
	mustClaim(t, c, m, "0", "1")
	if _, err := c.RenewMember(ctx(t), m); err != nil {
		t.Fatalf("RenewMember(%s) = %v", m, err)
	}
	_, mark := memberEtcdKeys(c, m)
	if _, err := client.Delete(ctx(t), mark); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Put(ctx(t), mark, m.ID, clientv3.WithLease(clientv3.LeaseID(m.Epoch))); err != nil {
		t.Fatal(err)
	}
	ms, err := c.GroupMembers(ctx(t), "g")
	if err != nil {
		t.Fatal(err)
	}
	listed := len(ms) == 1 && ms[0].Epoch == m.Epoch
	_, rerr := c.RenewMember(ctx(t), m)
	if listed != (rerr == nil) || (rerr != nil && !errors.Is(rerr, tenure.ErrLost)) {
		t.Errorf("RenewMember(%s) with its mark put back = %v while GroupMembers(g) = %s; want renewed exactly when listed, ErrLost otherwise", m, rerr, memberSet(ms))
	}
}
