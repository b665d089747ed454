//go:build openfinding

package etcd_test

import (
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Open finding (go test -tags openfinding -run TestForgedMarkFirstByRewritingTheLeasesKeys ./etcd/):
// a membership of group h put by hand on the lease of a live member of
// group g counts as a member of h when the same transaction also writes
// g's member's own membership key and mark again, unchanged. firstOnLease
// asks whether any other key on the lease was last written (ModRevision)
// before the mark was created; a key written again at the mark's revision
// passes, though it was created long before. g's member notices nothing
// (RenewMember compares values and leases, and its mark's CreateRevision
// is unchanged, so it stays first too), and keeps renewing the lease: the
// phantom is a live member of h that no process runs, for as long as g's
// member lives. h's partitions are assigned to it and never run, and
// ListForeign(h) does not list it, so release --force --member cannot
// remove it. Red when written:
//
//	GroupMembers(h) = "phantom#1"@…/4, <nil>; want none
//	ListForeign(h) = []; want the phantom's membership key and mark
//
// A fix must judge "first on the lease" by something a rewrite cannot
// move: a key's CreateRevision is not it as it stands (a partition key
// re-put on its claimer's lease keeps an older one), so this is for the
// lead to decide.
func TestForgedMarkFirstByRewritingTheLeasesKeys(t *testing.T) {
	client := newClient(t, startEtcd(t))
	c := newCoordinator(t, client)
	m, err := c.JoinGroup(ctx(t), "g", "live#1", time.Minute, 4)
	if err != nil {
		t.Fatal(err)
	}
	l := clientv3.LeaseID(m.Epoch)
	key, mark := memberEtcdKeys(c, m)
	got, err := client.Get(ctx(t), key)
	if err != nil || len(got.Kvs) != 1 {
		t.Fatalf("Get(%s) = %v, %v", key, got, err)
	}
	phantom := c.EtcdKey(fmt.Sprintf("#members/h#%016x", uint64(l)))
	if _, err := client.Txn(ctx(t)).Then(
		clientv3.OpPut(phantom+"#phantom#1", "60 4", clientv3.WithLease(l)),
		clientv3.OpPut(phantom, "phantom#1", clientv3.WithLease(l)),
		clientv3.OpPut(key, string(got.Kvs[0].Value), clientv3.WithLease(l)),
		clientv3.OpPut(mark, m.ID, clientv3.WithLease(l)),
	).Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RenewMember(ctx(t), m); err != nil {
		t.Errorf("RenewMember(%s) after the rewrite = %v; g's member goes on renewing the lease", m, err)
	}
	if ms, err := c.GroupMembers(ctx(t), "h"); err != nil || len(ms) != 0 {
		t.Errorf("GroupMembers(h) = %s, %v; want none", memberSet(ms), err)
	}
	if rs, err := c.ListForeign(ctx(t), "h"); err != nil || len(rs) != 2 {
		t.Errorf("ListForeign(h) = %+v, %v; want the phantom's membership key and mark", rs, err)
	}
}
