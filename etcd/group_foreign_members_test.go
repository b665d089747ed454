package etcd_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/etcd"
)

// A strayMember is a membership key of group "g" that no member wrote as
// it stands.
type strayMember struct {
	id, value string
	lease     clientv3.LeaseID // the lease it rides on; clientv3.NoLease for none
	keyLease  clientv3.LeaseID // the lease its key names
	malformed bool
	reason    string // a part of the reason ListForeign gives
}

// plantStrays puts the membership keys of group "g" that no member wrote
// as they stand, and partition g/1 on the lease longer than a day with
// its membership's ID; it returns the keys' mod revisions by ID.
func plantStrays(t *testing.T, client *clientv3.Client, c *etcd.Coordinator) ([]strayMember, map[string]uint64) {
	t.Helper()
	grant := func(secs int64) clientv3.LeaseID {
		l, err := client.Grant(ctx(t), secs)
		if err != nil {
			t.Fatal(err)
		}
		return l.ID
	}
	long, short := grant(2*86400), grant(600)
	strays := []strayMember{
		{"ghost", "10 4", clientv3.NoLease, clientv3.NoLease, false, "no lease"},
		{"longer", "10 4", long, long, false, "longer than tenure grants"},
		{"bad\x01id", "10 4", short, short, true, "not a holder identity"},
		{"valuer", "garbage", short, short, true, "a value"},
		{"moved", "10 4", short, long, true, "not the one its key names"},
	}
	revs := map[string]uint64{}
	for _, s := range strays {
		var opts []clientv3.OpOption
		if s.lease != clientv3.NoLease {
			opts = append(opts, clientv3.WithLease(s.lease))
		}
		key := fmt.Sprintf("#members/g#%016x#%s", uint64(s.keyLease), s.id)
		resp, err := client.Put(ctx(t), c.EtcdKey(key), s.value, opts...)
		if err != nil {
			t.Fatal(err)
		}
		revs[s.id] = uint64(resp.Header.Revision)
	}
	if _, err := client.Put(ctx(t), c.EtcdKey("g/1"), "longer", clientv3.WithLease(long)); err != nil {
		t.Fatal(err)
	}
	return strays, revs
}

// TestForeignMembershipsAreNoMembers: membership keys of a group that no
// member wrote as they stand (no lease, a lease longer than a day, an ID
// that is not a holder identity, a value JoinGroup does not write, a key
// that names another lease than its own) are no members: GroupMembers
// lists the member that joined alone, and GroupPartitions leaves out the
// partition on the long lease.
func TestForeignMembershipsAreNoMembers(t *testing.T) {
	t.Parallel()
	client := newClient(t, startEtcd(t))
	c := newCoordinator(t, client)
	m, err := c.JoinGroup(ctx(t), "g", "w1", 5*time.Second, 4)
	if err != nil {
		t.Fatal(err)
	}
	plantStrays(t, client, c)
	if res, err := c.ClaimPartitions(ctx(t), m, []string{"0"}); err != nil || res[0].Err != nil {
		t.Fatalf("ClaimPartitions(0) = %+v, %v", res, err)
	}
	if ms, err := c.GroupMembers(ctx(t), "g"); err != nil || len(ms) != 1 || ms[0].ID != "w1" {
		t.Errorf("GroupMembers = %s, %v; want w1 alone", memberSet(ms), err)
	}
	if gs, err := c.GroupPartitions(ctx(t), "g"); err != nil || len(gs) != 1 || gs[0].Key != "g/0" {
		t.Errorf("GroupPartitions = %+v, %v; want g/0 alone", gs, err)
	}
}

// TestForeignMembershipsListedAndRemoved: ListForeign lists each
// membership key that no member wrote as it stands as a record of its
// group's key with its member's ID (under the group's prefix and "", not
// under another's), never a live member's; RemoveForeign deletes one only
// at the revision it was read at, and leaves the members alone.
func TestForeignMembershipsListedAndRemoved(t *testing.T) {
	t.Parallel()
	client := newClient(t, startEtcd(t))
	c := newCoordinator(t, client)
	for _, g := range []string{"g", "g/x", "gx"} {
		if _, err := c.JoinGroup(ctx(t), g, "w1", 5*time.Second, 4); err != nil {
			t.Fatal(err)
		}
	}
	strays, revs := plantStrays(t, client, c)
	if _, err := client.Put(ctx(t), c.EtcdKey("#members/g#nonsense"), "x"); err != nil {
		t.Fatal(err)
	}
	members := func(prefix string) []tenure.ForeignRecord {
		t.Helper()
		rs, err := c.ListForeign(ctx(t), prefix)
		if err != nil {
			t.Fatalf("ListForeign(%q) error = %v", prefix, err)
		}
		return slices.DeleteFunc(rs, func(r tenure.ForeignRecord) bool { return r.Member == "" })
	}
	rs := members("g")
	if len(rs) != len(strays)+1 {
		t.Fatalf("ListForeign(g) memberships = %+v; want %d", rs, len(strays)+1)
	}
	byID := map[string]tenure.ForeignRecord{}
	for _, r := range rs {
		byID[r.Member] = r
	}
	for _, s := range strays {
		r, ok := byID[s.id]
		if !ok || r.Key != "g" || r.Token != revs[s.id] || r.Malformed != s.malformed || !strings.Contains(r.Reason, s.reason) ||
			(r.TTL < 0) != (s.lease == clientv3.NoLease) {
			t.Errorf("ListForeign(g) membership of %q = %+v; want key g, token %d, malformed %v, reason with %q", s.id, r, revs[s.id], s.malformed, s.reason)
		}
	}
	if r := byID["nonsense"]; r.Key != "g" || !r.Malformed {
		t.Errorf("ListForeign(g) membership key that does not parse = %+v; want a malformed record of g", r)
	}
	if all, other := members(""), members("h"); len(all) != len(rs) || len(other) != 0 {
		t.Errorf("ListForeign memberships: %d under \"\", %d under \"h\"; want %d and 0", len(all), len(other), len(rs))
	}
	if sub := members("g/"); len(sub) != 0 {
		t.Errorf("ListForeign(g/) memberships = %+v; want none (g/x has only a member)", sub)
	}
	for _, r := range rs {
		stale := r
		stale.Token--
		if ok, err := c.RemoveForeign(ctx(t), stale); ok || err != nil {
			t.Errorf("RemoveForeign(%q at another revision) = %v, %v; want false, nil", r.Member, ok, err)
		}
		if ok, err := c.RemoveForeign(ctx(t), r); !ok || err != nil {
			t.Errorf("RemoveForeign(%+v) = %v, %v; want true, nil", r, ok, err)
		}
	}
	if left := members(""); len(left) != 0 {
		t.Errorf("ListForeign memberships after RemoveForeign = %+v; want none", left)
	}
	for _, g := range []string{"g", "g/x", "gx"} {
		if ms, err := c.GroupMembers(ctx(t), g); err != nil || len(ms) != 1 || ms[0].ID != "w1" {
			t.Errorf("GroupMembers(%s) after RemoveForeign = %s, %v; want w1", g, memberSet(ms), err)
		}
	}
}

// TestGroupMembersLooksLeasesUpOnce: GroupMembers asks etcd about each
// membership's lease once (one LeaseTimeToLive per membership on the first
// read), not on every read: every member calls it often. A membership
// that joins later is looked up on the next read, and one on a lease
// longer than a day is still no member on every read.
func TestGroupMembersLooksLeasesUpOnce(t *testing.T) {
	t.Parallel()
	eps := startEtcd(t)
	var lookups atomic.Int64
	client := hookedClient(t, eps, rpcHooks{call: func(_ context.Context, method string, _ any) error {
		if method == "/etcdserverpb.Lease/LeaseTimeToLive" {
			lookups.Add(1)
		}
		return nil
	}})
	c := newCoordinator(t, client)
	for _, id := range []string{"w1", "w2", "w3"} {
		if _, err := c.JoinGroup(ctx(t), "g", id, 5*time.Second, 2); err != nil {
			t.Fatal(err)
		}
	}
	long, err := client.Grant(ctx(t), 2*86400)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Put(ctx(t), c.EtcdKey(fmt.Sprintf("#members/g#%016x#longer", long.ID)), "10 2", clientv3.WithLease(long.ID)); err != nil {
		t.Fatal(err)
	}
	read := func(want int, lookedUp int64) {
		t.Helper()
		before := lookups.Load()
		ms, err := c.GroupMembers(ctx(t), "g")
		if err != nil || len(ms) != want {
			t.Fatalf("GroupMembers = %s, %v; want %d members", memberSet(ms), err, want)
		}
		if n := lookups.Load() - before; n != lookedUp {
			t.Errorf("GroupMembers of %d members looked leases up %d times; want %d", want, n, lookedUp)
		}
	}
	read(3, 4)
	read(3, 0)
	if _, err := c.JoinGroup(ctx(t), "g", "w4", 5*time.Second, 2); err != nil {
		t.Fatal(err)
	}
	read(4, 1)
	read(4, 0)
}

// TestMembershipOnAnotherMembersLease: a membership key put by hand on a
// live member's lease, naming that lease (as JoinGroup names its own), is
// no member: the mark JoinGroup put on that lease names the live member.
// Were it a member, partitions would be assigned to it that no process
// runs, for as long as the live member renews, and release --force could
// not remove it. ListForeign lists it,
// RemoveForeign deletes it, and the live member stays.
func TestMembershipOnAnotherMembersLease(t *testing.T) {
	t.Parallel()
	client := newClient(t, startEtcd(t))
	c := newCoordinator(t, client)
	m, err := c.JoinGroup(ctx(t), "g", "live#1", time.Minute, 4)
	if err != nil {
		t.Fatal(err)
	}
	key := c.EtcdKey(fmt.Sprintf("#members/g#%016x#phantom#1", m.Epoch))
	if _, err := client.Put(ctx(t), key, "60 4", clientv3.WithLease(clientv3.LeaseID(m.Epoch))); err != nil {
		t.Fatal(err)
	}
	ms, err := c.GroupMembers(ctx(t), "g")
	if err != nil || len(ms) != 1 || ms[0].ID != "live#1" {
		t.Errorf("GroupMembers(g) = %v, %v; want live#1 alone", ms, err)
	}
	rs, err := c.ListForeign(ctx(t), "g")
	if err != nil || len(rs) != 1 || rs[0].Member != "phantom#1" || !strings.Contains(rs[0].Reason, `mark names another member ("live#1")`) {
		t.Fatalf("ListForeign(g) = %+v, %v; want phantom#1's membership key, on a lease whose mark names live#1", rs, err)
	}
	if removed, err := c.RemoveForeign(ctx(t), rs[0]); !removed || err != nil {
		t.Errorf("RemoveForeign(%+v) = %t, %v; want it removed", rs[0], removed, err)
	}
	if ms, err := c.GroupMembers(ctx(t), "g"); err != nil || len(ms) != 1 || ms[0].Epoch != m.Epoch {
		t.Errorf("GroupMembers(g) after RemoveForeign = %v, %v; want live#1 still", ms, err)
	}
}
