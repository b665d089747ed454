package etcd_test

import (
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestMemberKeyPutAgainOnItsLease: a live member's own membership key,
// deleted and put again by hand exactly as JoinGroup wrote it (same key,
// value and lease), after a stray membership key was put on that lease,
// is still the member: the stray one is no member, ListForeign never lists
// the live member's key, and RemoveForeign of every record listed leaves
// it. Under "the first membership key on a lease, by create revision, is
// the member", the stray key becomes the member (partitions are assigned
// to an ID no process runs, and release --force cannot remove it) and the
// live member's key a foreign record that release --force --member
// deletes while its process renews the lease.
func TestMemberKeyPutAgainOnItsLease(t *testing.T) {
	t.Parallel()
	client := newClient(t, startEtcd(t))
	c := newCoordinator(t, client)
	m, err := c.JoinGroup(ctx(t), "g", "live#1", time.Minute, 4)
	if err != nil {
		t.Fatal(err)
	}
	lease := clientv3.WithLease(clientv3.LeaseID(m.Epoch))
	own := c.EtcdKey(fmt.Sprintf("#members/g#%016x#live#1", m.Epoch))
	stray := c.EtcdKey(fmt.Sprintf("#members/g#%016x#phantom#1", m.Epoch))
	if _, err := client.Put(ctx(t), stray, "60 4", lease); err != nil {
		t.Fatal(err)
	}
	get, err := client.Get(ctx(t), own)
	if err != nil || len(get.Kvs) != 1 {
		t.Fatalf("Get(own membership key) = %v, %v", get, err)
	}
	value := string(get.Kvs[0].Value)
	if _, err := client.Delete(ctx(t), own); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Put(ctx(t), own, value, lease); err != nil {
		t.Fatal(err)
	}
	if ms, err := c.GroupMembers(ctx(t), "g"); err != nil || len(ms) != 1 || ms[0].ID != "live#1" {
		t.Errorf("GroupMembers(g) = %s, %v; want live#1 alone", memberSet(ms), err)
	}
	rs, err := c.ListForeign(ctx(t), "g")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Member == "live#1" {
			t.Errorf("ListForeign(g) lists the live member's own key: %+v", r)
		}
		if _, err := c.RemoveForeign(ctx(t), r); err != nil {
			t.Errorf("RemoveForeign(%+v): %v", r, err)
		}
	}
	if get, err := client.Get(ctx(t), own); err != nil || len(get.Kvs) != 1 {
		t.Errorf("live member's key after RemoveForeign of %+v: %v, %v; want it kept", rs, get, err)
	}
	if ms, err := c.GroupMembers(ctx(t), "g"); err != nil || len(ms) != 1 || ms[0].ID != "live#1" {
		t.Errorf("GroupMembers(g) after RemoveForeign = %s, %v; want live#1 alone", memberSet(ms), err)
	}
}
