package etcd_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/partition"
	"github.com/tenure-dev/tenure/partition/partitiontest"
)

// TestMemberWhoseMarkIsDeletedHandsItsPartitionsOver: when the mark of a
// running member's lease is deleted by hand, that member is no member
// (see TestMembershipWithoutItsMark), though its process still renews the
// lease: its partitions do not stay stranded on its lease. The other
// member takes every partition, and ListForeign lists the membership key
// left without its mark, for release --force --member. The bounds are
// liveness slack for a loaded machine, not a speed.
func TestMemberWhoseMarkIsDeletedHandsItsPartitionsOver(t *testing.T) {
	client := newClient(t, startEtcd(t))
	run := func(name string) {
		cfg := partition.DefaultConfig()
		cfg.Key, cfg.Partitions, cfg.Holder, cfg.Instance, cfg.TTL = "g", 4, name, "1", 3*time.Second
		partitiontest.RunMember(t, newCoordinator(t, client), cfg)
	}
	run("a")
	run("b")
	c := newCoordinator(t, client)
	owners := func() map[string]int {
		gs, err := c.GroupPartitions(ctx(t), "g")
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		for _, g := range gs {
			out[g.Holder]++
		}
		return out
	}
	waitFor(t, 60*time.Second, "a#1 and b#1 to share the 4 partitions", func() bool {
		o := owners()
		return o["a#1"] > 0 && o["a#1"]+o["b#1"] == 4
	})
	ms, err := c.GroupMembers(ctx(t), "g")
	if err != nil || len(ms) != 2 || ms[0].ID != "a#1" {
		t.Fatalf("GroupMembers(g) = %s, %v; want a#1 and b#1", memberSet(ms), err)
	}
	if _, err := client.Delete(ctx(t), c.EtcdKey(fmt.Sprintf("#members/g#%016x", ms[0].Epoch))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "b#1 to own the 4 partitions", func() bool { return owners()["b#1"] == 4 })
	rs, err := c.ListForeign(ctx(t), "g")
	if err != nil || len(rs) != 1 || rs[0].Member != "a#1" || !strings.Contains(rs[0].Reason, "no mark of its lease") {
		t.Errorf("ListForeign(g) = %+v, %v; want a#1's membership key, with no mark of its lease", rs, err)
	}
}

// waitFor polls cond every 100ms until it holds, failing the test after
// limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(limit); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("waited %s for %s", limit, what)
		}
	}
}
