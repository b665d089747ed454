package etcd_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/etcd"
)

// foreignKeys returns the records of keys (not memberships) that
// ListForeign(prefix) lists, by key.
func foreignKeys(t *testing.T, c *etcd.Coordinator, prefix string) map[string]tenure.ForeignRecord {
	t.Helper()
	rs, err := c.ListForeign(ctx(t), prefix)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]tenure.ForeignRecord{}
	for _, r := range rs {
		if r.Member == "" {
			out[r.Key] = r
		}
	}
	return out
}

// TestLiveKeysOnSharedLeasesAreNotForeign: the controls of
// TestKeyPutByHandOnALiveLease. A grant on a lease of its own and the
// partitions a member claimed on its lease are tenure's, also once keys
// were put by hand on the same leases: ListForeign lists only the keys put
// by hand, and RemoveForeign of a record naming a live grant or partition
// removes nothing.
func TestLiveKeysOnSharedLeasesAreNotForeign(t *testing.T) {
	t.Parallel()
	client := newClient(t, startEtcd(t))
	c := newCoordinator(t, client)
	alice, err := c.JoinGroup(ctx(t), "g", "alice#1", time.Minute, 4)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.ClaimPartitions(ctx(t), alice, []string{"0", "1", "2"})
	if err != nil {
		t.Fatal(err)
	}
	var live []tenure.Grant
	for _, r := range res {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		live = append(live, r.Grant)
	}
	live = append(live, mustAcquire(t, c, "k1", "dave", time.Minute))
	check := func(when string) {
		t.Helper()
		fs := foreignKeys(t, c, "")
		for _, g := range live {
			if r, ok := fs[g.Key]; ok {
				t.Errorf("%s: ListForeign lists the live grant %s: %+v", when, g, r)
			}
			r := tenure.ForeignRecord{Key: g.Key, Holder: g.Holder, Token: g.Token}
			if removed, err := c.RemoveForeign(ctx(t), r); removed || err != nil {
				t.Errorf("%s: RemoveForeign(%+v) = %t, %v; want nothing removed", when, r, removed, err)
			}
		}
	}
	check("before any key put by hand")
	for key, l := range map[string]int64{"g/3": int64(alice.Epoch), "k": int64(alice.Epoch), "k2": int64(leaseOf(t, c, "k1"))} {
		if _, err := client.Put(ctx(t), c.EtcdKey(key), "ghost#1", clientv3.WithLease(clientv3.LeaseID(l))); err != nil {
			t.Fatal(err)
		}
	}
	check("with keys put by hand on their leases")
	fs := foreignKeys(t, c, "")
	for _, key := range []string{"g/3", "k", "k2"} {
		if _, ok := fs[key]; !ok {
			t.Errorf("ListForeign lists no record of %q, put by hand on a live lease: %+v", key, fs)
		}
	}
	if len(fs) != 3 {
		t.Errorf("ListForeign lists %d records of keys: %+v; want g/3, k and k2", len(fs), fs)
	}
	// A record read before the key was freed and granted names a write
	// that is gone: removing it removes nothing, and carol's grant stays.
	if _, ok := fs["k"]; !ok {
		return
	}
	if _, err := client.Delete(ctx(t), c.EtcdKey("k")); err != nil {
		t.Fatal(err)
	}
	gk := mustAcquire(t, c, "k", "carol", time.Minute)
	if removed, err := c.RemoveForeign(ctx(t), fs["k"]); removed || err != nil {
		t.Errorf("RemoveForeign(%+v) after carol acquired k = %t, %v; want nothing removed", fs["k"], removed, err)
	}
	if now, held, err := c.Leader(ctx(t), "k"); err != nil || !held || now.Token != gk.Token {
		t.Errorf("Leader(k) = %s, %t, %v; want carol's grant %s", now, held, err, gk)
	}
}

// TestKeyPutOnAGrantLeaseBeforeItsKey: a key "k2" put by hand on the lease
// of dave's grant of "k1", which dave then releases; its coordinator keeps
// the lease, which now carries k2 alone, for dave's next Acquire. Put on
// that lease, k1 would share it with a key created before it, and which of
// the two tenure put there could not be told from etcd: Acquire sees k2
// after its put and puts k1 on a new lease instead. k1 is dave's live
// grant, never listed foreign; k2 is left on the old lease, which nothing
// renews, and is freed within a TTL.
func TestKeyPutOnAGrantLeaseBeforeItsKey(t *testing.T) {
	t.Parallel()
	client := newClient(t, startEtcd(t))
	c := newCoordinator(t, client)
	const ttl = 3 * time.Second
	g := mustAcquire(t, c, "k1", "dave", ttl)
	l := leaseOf(t, c, "k1")
	if _, err := client.Put(ctx(t), c.EtcdKey("k2"), "ghost#2", clientv3.WithLease(l)); err != nil {
		t.Fatal(err)
	}
	if err := c.Release(ctx(t), g); err != nil {
		t.Fatal(err)
	}
	g = mustAcquire(t, c, "k1", "dave", ttl)
	if again := leaseOf(t, c, "k1"); again == l {
		t.Fatalf("dave's second grant of k1 rides on lease %x, which k2 was put on first; want a new lease", again)
	}
	if r, ok := foreignKeys(t, c, "k")["k1"]; ok {
		t.Errorf("ListForeign(k) lists dave's live grant %s: %+v", g, r)
	}
	// dave renews k1 throughout; k2's lease ends within a TTL.
	deadline := time.Now().Add(3 * ttl)
	for time.Now().Before(deadline) {
		if _, err := c.Renew(ctx(t), g); err != nil {
			t.Fatalf("Renew(%s) = %v; want dave's grant renewed", g, err)
		}
		if _, err := c.Acquire(ctx(t), "k2", "carol", ttl); err == nil {
			return
		} else if !errors.Is(err, tenure.ErrHeld) {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("k2 still held %s after it was put on a lease that nothing renews", 3*ttl)
}

// TestKeyOfAnotherGroupOnAMemberLease: keys put by hand on the lease of
// alice, a member of g, holding alice's ID, that are none of its
// partitions: "h/0" (a partition of another group), "g/x/0" (of a group
// nested in g) and "k" (a single key). Each is foreign: ListForeign lists
// it, claims and Acquires refuse it, also for alice's ID (Acquire does not
// take over a key tenure did not write, whoever it names), and
// RemoveForeign frees it; alice's partition g/0 stays hers.
func TestKeyOfAnotherGroupOnAMemberLease(t *testing.T) {
	t.Parallel()
	client := newClient(t, startEtcd(t))
	c := newCoordinator(t, client)
	alice, err := c.JoinGroup(ctx(t), "g", "alice#1", time.Minute, 2)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := c.ClaimPartitions(ctx(t), alice, []string{"0"}); err != nil || res[0].Err != nil {
		t.Fatalf("ClaimPartitions(alice, 0) = %+v, %v", res, err)
	}
	on := clientv3.WithLease(clientv3.LeaseID(alice.Epoch))
	strays := []string{"h/0", "g/x/0", "k"}
	for _, key := range strays {
		if _, err := client.Put(ctx(t), c.EtcdKey(key), "alice#1", on); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Acquire(ctx(t), "k", "alice#1", time.Minute); !errors.Is(err, tenure.ErrHeld) {
		t.Errorf("Acquire(k, alice#1) = %v; want it refused: k is on alice's member lease, put by hand", err)
	}
	h, err := c.JoinGroup(ctx(t), "h", "bob#1", time.Minute, 2)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := c.ClaimPartitions(ctx(t), h, []string{"0"}); err != nil || !errors.Is(res[0].Err, tenure.ErrHeld) {
		t.Fatalf("ClaimPartitions(bob, h/0) = %+v, %v; want it refused", res, err)
	}
	fs := foreignKeys(t, c, "")
	for _, key := range strays {
		r, ok := fs[key]
		if !ok {
			t.Errorf("ListForeign lists no record of %q, put by hand on alice's lease: %+v", key, fs)
			continue
		}
		if !strings.Contains(r.Reason, `member "alice#1" of group "g"`) {
			t.Errorf("record of %q says %q; want it to name alice's membership", key, r.Reason)
		}
		if removed, err := c.RemoveForeign(ctx(t), r); !removed || err != nil {
			t.Errorf("RemoveForeign(%+v) = %t, %v; want it removed", r, removed, err)
		}
	}
	if _, ok := fs["g/0"]; ok {
		t.Errorf("ListForeign lists alice's partition g/0: %+v", fs["g/0"])
	}
	if res, err := c.ClaimPartitions(ctx(t), h, []string{"0"}); err != nil || res[0].Err != nil {
		t.Errorf("ClaimPartitions(bob, h/0) after RemoveForeign = %+v, %v; want it claimed", res, err)
	}
	if ps, err := c.GroupPartitions(ctx(t), "g"); err != nil || len(ps) != 1 || ps[0].Key != "g/0" || ps[0].Holder != "alice#1" {
		t.Errorf("GroupPartitions(g) = %+v, %v; want g/0 of alice#1", ps, err)
	}
}

// TestMembershipOfASecondGroupOnAMemberLease: a membership key and mark
// of group h put by hand on the lease of alice, a member of g, with a
// partition h/0 beside them, all naming alice: the marks' rule already
// makes it no member of h (its mark was not first on the lease), so h/0 is
// no partition of a member either: ListForeign lists the membership
// records and h/0, and once they are removed, bob of h claims h/0.
func TestMembershipOfASecondGroupOnAMemberLease(t *testing.T) {
	t.Parallel()
	client := newClient(t, startEtcd(t))
	c := newCoordinator(t, client)
	alice, err := c.JoinGroup(ctx(t), "g", "alice#1", time.Minute, 2)
	if err != nil {
		t.Fatal(err)
	}
	on := clientv3.WithLease(clientv3.LeaseID(alice.Epoch))
	for key, v := range map[string]string{
		fmt.Sprintf("#members/h#%016x#alice#1", alice.Epoch): "60 2",
		fmt.Sprintf("#members/h#%016x", alice.Epoch):         "alice#1",
		"h/0": "alice#1",
	} {
		if _, err := client.Put(ctx(t), c.EtcdKey(key), v, on); err != nil {
			t.Fatal(err)
		}
	}
	if ms, err := c.GroupMembers(ctx(t), "h"); err != nil || len(ms) != 0 {
		t.Errorf("GroupMembers(h) = %s, %v; want none", memberSet(ms), err)
	}
	rs, err := c.ListForeign(ctx(t), "h")
	if err != nil {
		t.Fatal(err)
	}
	var key, members int
	for _, r := range rs {
		switch {
		case r.Member == "alice#1":
			members++
		case r.Key == "h/0":
			key++
		}
	}
	if key != 1 || members != 2 {
		t.Fatalf("ListForeign(h) = %+v; want h/0 and the membership key and mark of h on alice's lease", rs)
	}
	for _, r := range rs {
		if removed, err := c.RemoveForeign(ctx(t), r); !removed || err != nil {
			t.Errorf("RemoveForeign(%+v) = %t, %v; want it removed", r, removed, err)
		}
	}
	bob, err := c.JoinGroup(ctx(t), "h", "bob#1", time.Minute, 2)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := c.ClaimPartitions(ctx(t), bob, []string{"0"}); err != nil || res[0].Err != nil {
		t.Errorf("ClaimPartitions(bob, h/0) after RemoveForeign = %+v, %v; want it claimed", res, err)
	}
	if ms, err := c.GroupMembers(ctx(t), "g"); err != nil || len(ms) != 1 || ms[0].Epoch != alice.Epoch {
		t.Errorf("GroupMembers(g) = %s, %v; want alice#1 still", memberSet(ms), err)
	}
}
