package etcd_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/partition"
	"github.com/tenure-dev/tenure/partition/partitiontest"
)

// TestMemberWhoseMarkIsDeletedHandsItsPartitionsOver: when the mark of a
// running member's lease is deleted by hand, that member is no member
// (see TestMembershipWithoutItsMark), and its next renewal says so
// (ErrLost): its partitions do not stay stranded on its lease, and it does
// not sit idle. It joins again, the two members share the partitions
// again, and its old lease, no longer renewed, ends with its old
// membership key: nothing is left for release --force. The bounds are liveness
// slack for a loaded machine, not a speed.
func TestMemberWhoseMarkIsDeletedHandsItsPartitionsOver(t *testing.T) {
	t.Parallel()
	client := newClient(t, startEtcd(t))
	run := func(name string) {
		cfg := partition.DefaultConfig()
		cfg.Key, cfg.Partitions, cfg.Holder, cfg.Instance, cfg.TTL = "g", 4, name, "1", 3*time.Second
		partitiontest.RunMember(t, newCoordinator(t, client), cfg)
	}
	run("a")
	run("b")
	c := newCoordinator(t, client)
	owners := func() map[string]int { return partitionOwners(t, c, "g") }
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
	// a#1's next renewal finds its mark gone (ErrLost): it joins again.
	waitFor(t, 60*time.Second, "a#1 to join again, with a new epoch, and share the 4 partitions", func() bool {
		now, err := c.GroupMembers(ctx(t), "g")
		o := owners()
		return err == nil && len(now) == 2 && now[0].ID == "a#1" && now[0].Epoch != ms[0].Epoch && o["a#1"] > 0 && o["a#1"]+o["b#1"] == 4
	})
	// Its old lease, no longer renewed, ends within its TTL, and its old
	// membership key with it.
	waitFor(t, 60*time.Second, "a#1's old membership key to go with its lease", func() bool {
		rs, err := c.ListForeign(ctx(t), "g")
		return err == nil && len(rs) == 0
	})
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
