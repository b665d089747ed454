package etcd_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure/etcd"
	"github.com/tenure-dev/tenure/partition"
)

// TestMemberWithMorePartitionsThanATxnHolds: a member whose lease carries
// more partitions than one etcd transaction may read (--max-txn-ops, 128)
// is a member to a Coordinator that first reads the group after the
// claims, and stays one when some of the keys its lease listed are gone
// by the time they are read (partitions handed over).
func TestMemberWithMorePartitionsThanATxnHolds(t *testing.T) {
	t.Parallel()
	const p = 300
	client := newClient(t, startEtcd(t))
	m := joinWithPartitions(t, newCoordinator(t, client), "g", "w1", p)

	fresh := newCoordinator(t, client)
	ms, err := fresh.GroupMembers(ctx(t), "g")
	if err != nil || len(ms) != 1 || ms[0].ID != "w1" {
		t.Fatalf("fresh GroupMembers(g) = %s, %v; want w1", memberSet(ms), err)
	}

	t.Run("keys gone since the listing", func(t *testing.T) {
		ttl, err := client.TimeToLive(ctx(t), clientv3.LeaseID(m.Epoch), clientv3.WithAttachedKeys())
		if err != nil || len(ttl.Keys) != p+2 {
			t.Fatalf("TimeToLive = %d keys, %v; want %d", len(ttl.Keys), err, p+2)
		}
		if _, err := client.Delete(ctx(t), fresh.EtcdKey("g/"), clientv3.WithPrefix()); err != nil {
			t.Fatal(err)
		}
		mark, err := client.Get(ctx(t), fresh.EtcdKey(fmt.Sprintf("#members/g#%016x", m.Epoch)))
		if err != nil || len(mark.Kvs) != 1 {
			t.Fatalf("Get(mark) = %v, %v", mark, err)
		}
		why, err := newCoordinator(t, client).FirstOnLease(ctx(t), "g", mark.Kvs[0], ttl.Keys)
		if why != "" || err != nil {
			t.Errorf("FirstOnLease(mark, keys listed before %d partitions went) = %q, %v; want first", p, why, err)
		}
	})
}

// joinWithPartitions joins id to group through c and claims partitions
// 0..p-1 for it.
func joinWithPartitions(t testing.TB, c *etcd.Coordinator, group, id string, p int) partition.Member {
	t.Helper()
	m, err := c.JoinGroup(ctx(t), group, id, time.Minute, p)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, p)
	for i := range names {
		names[i] = id + "-" + strconv.Itoa(i)
	}
	res, err := c.ClaimPartitions(ctx(t), m, names)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("ClaimPartitions: %+v", r)
		}
	}
	return m
}

// BenchmarkFirstGroupMembers measures a fresh Coordinator's first
// GroupMembers of a group of 4 members with 500 partitions each: it reads
// every key on each member's lease once. Run with:
//
//	go test -run '^$' -bench FirstGroupMembers -benchtime 20x ./etcd/
func BenchmarkFirstGroupMembers(b *testing.B) {
	client := newClient(b, startEtcd(b))
	for i := range 4 {
		joinWithPartitions(b, newCoordinator(b, client), "g", "w"+strconv.Itoa(i), 500)
	}
	for b.Loop() {
		c := newCoordinator(b, client)
		if ms, err := c.GroupMembers(ctx(b), "g"); err != nil || len(ms) != 4 {
			b.Fatalf("GroupMembers(g) = %s, %v; want 4", memberSet(ms), err)
		}
	}
}
