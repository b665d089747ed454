package etcd_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
)

// TestForgedMarkFirstByRewritingTheLeasesKeys: a membership of group h put
// by hand on the lease of a live member of group g, while g's member's own
// membership key and mark are written again by hand, unchanged (in the
// same transaction, or later), is no member of h: those keys were created
// before the forged mark, however recently they were written. (Judged by
// when the lease's other keys were last written, the forged mark was the
// first write on the lease, and h had a live member that no process runs,
// renewed by g's member, that ListForeign did not list.) ListForeign(h)
// lists the forged key and mark, RemoveForeign deletes them, and g's member
// stays. When g's member's key and mark are instead deleted and created
// again with the forged ones in one transaction, neither membership is
// first on the lease: both are foreign, and g's member's next renewal
// says lost, so it joins again and the lease, no longer renewed, ends.
func TestForgedMarkFirstByRewritingTheLeasesKeys(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// forge writes h's phantom membership (keys hk, hm) and g's
		// member's key gk and mark gm again on lease l.
		forge    func(t *testing.T, client *clientv3.Client, l clientv3.OpOption, hk, hm, gk, gv, gm, gid string)
		recreate bool // g's member's keys are created again
	}{
		{name: "rewritten in the same transaction", forge: func(t *testing.T, client *clientv3.Client, l clientv3.OpOption, hk, hm, gk, gv, gm, gid string) {
			txn(t, client, clientv3.OpPut(hk, "60 4", l), clientv3.OpPut(hm, "phantom#1", l), clientv3.OpPut(gk, gv, l), clientv3.OpPut(gm, gid, l))
		}},
		{name: "rewritten after", forge: func(t *testing.T, client *clientv3.Client, l clientv3.OpOption, hk, hm, gk, gv, gm, gid string) {
			txn(t, client, clientv3.OpPut(hk, "60 4", l), clientv3.OpPut(hm, "phantom#1", l))
			txn(t, client, clientv3.OpPut(gk, gv, l), clientv3.OpPut(gm, gid, l))
		}},
		{name: "created again in the same transaction", recreate: true, forge: func(t *testing.T, client *clientv3.Client, l clientv3.OpOption, hk, hm, gk, gv, gm, gid string) {
			txn(t, client, clientv3.OpDelete(gk), clientv3.OpDelete(gm))
			txn(t, client, clientv3.OpPut(hk, "60 4", l), clientv3.OpPut(hm, "phantom#1", l), clientv3.OpPut(gk, gv, l), clientv3.OpPut(gm, gid, l))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
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
			tc.forge(t, client, clientv3.WithLease(l), phantom+"#phantom#1", phantom, key, string(got.Kvs[0].Value), mark, m.ID)
			if ms, err := c.GroupMembers(ctx(t), "h"); err != nil || len(ms) != 0 {
				t.Errorf("GroupMembers(h) = %s, %v; want none", memberSet(ms), err)
			}
			rs, err := c.ListForeign(ctx(t), "h")
			if err != nil || len(rs) != 2 {
				t.Fatalf("ListForeign(h) = %+v, %v; want the phantom's membership key and mark", rs, err)
			}
			_, rerr := c.RenewMember(ctx(t), m)
			ms, err := c.GroupMembers(ctx(t), "g")
			if err != nil {
				t.Fatal(err)
			}
			if tc.recreate {
				if len(ms) != 0 || !errors.Is(rerr, tenure.ErrLost) {
					t.Errorf("g's member's keys created again with the phantom's: GroupMembers(g) = %s, RenewMember = %v; want no member, ErrLost", memberSet(ms), rerr)
				}
				return
			}
			if rerr != nil || len(ms) != 1 || ms[0].Epoch != m.Epoch {
				t.Errorf("g's member's keys written again: GroupMembers(g) = %s, RenewMember = %v; want it still a member, renewed", memberSet(ms), rerr)
			}
			for _, r := range rs {
				if _, err := c.RemoveForeign(ctx(t), r); err != nil {
					t.Fatal(err)
				}
			}
			if rs, err := c.ListForeign(ctx(t), ""); err != nil || len(rs) != 0 {
				t.Errorf("ListForeign() after RemoveForeign = %+v, %v; want none", rs, err)
			}
			if ms, err := c.GroupMembers(ctx(t), "g"); err != nil || len(ms) != 1 || ms[0].Epoch != m.Epoch {
				t.Errorf("GroupMembers(g) after RemoveForeign = %s, %v; want live#1 still", memberSet(ms), err)
			}
		})
	}
}

// txn commits ops in one transaction.
func txn(t *testing.T, client *clientv3.Client, ops ...clientv3.Op) {
	t.Helper()
	if _, err := client.Txn(ctx(t)).Then(ops...).Commit(); err != nil {
		t.Fatal(err)
	}
}
