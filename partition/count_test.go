package partition_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure/partition"
)

// refused waits for member name's Run to end, and checks that it refused
// to run beside a member with another partition count, naming both.
func (c *cluster) refused(name string, mine, theirs int, other string) {
	c.t.Helper()
	n := c.nodes[name]
	select {
	case err := <-n.done:
		delete(c.nodes, name)
		var ce *partition.CountError
		if !errors.As(err, &ce) || ce.Partitions != mine || ce.Theirs != theirs || ce.Member != other+"#1" || ce.Group != c.cfg.Key {
			c.t.Errorf("Run(%s) = %v; want a *partition.CountError for %d partitions beside %s#1's %d", name, err, mine, other, theirs)
		}
	case <-time.After(5 * time.Second):
		c.t.Errorf("Run(%s) with %d partitions beside a member with %d still runs after 5s; want it refused (owners %v)", name, mine, theirs, c.owners())
	}
}

// members returns the IDs of the group's live members.
func (c *cluster) members() []string {
	ms, err := c.coord.GroupMembers(context.Background(), c.cfg.Key)
	if err != nil {
		c.t.Fatal(err)
	}
	var ids []string
	for _, m := range ms {
		ids = append(ids, m.ID)
	}
	return ids
}

// TestGroupRefusesAnotherPartitionCount (issue #21): member a runs the
// group with P partitions; b joins with another count. b refuses to run
// (Run returns a *CountError naming both counts) and leaves the group; a
// keeps every partition all along, none is lost. Of members started
// together with different counts, at least one refuses (both may, if each
// announced its count before the other read the membership).
func TestGroupRefusesAnotherPartitionCount(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pa, pb int
	}{
		{"fewer", 8, 4},
		{"more", 4, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newCluster(t, tc.pa)
				defer c.close()
				c.start("a")
				c.await("a owns every partition", 5*time.Second, c.settled)
				c.cfg.Partitions = tc.pb
				c.start("b")
				c.refused("b", tc.pb, tc.pa, "a")
				if got := c.members(); len(got) != 1 || got[0] != "a#1" {
					t.Errorf("members after b refused = %v; want [a#1]: b leaves", got)
				}
				for range 20 { // a hands nothing over and loses nothing meanwhile or after
					if got := len(c.nodes["a"].g.Snapshot().Owned); got != tc.pa {
						t.Fatalf("a owns %d partitions; want all %d", got, tc.pa)
					}
					time.Sleep(c.cfg.EffectiveDebounce() + 100*time.Millisecond)
				}
			})
		})
	}
	t.Run("started together", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := newCluster(t, 8)
			defer c.close()
			c.start("a")
			c.cfg.Partitions = 4
			c.start("b")
			time.Sleep(5 * time.Second)
			refused := 0
			for name, n := range c.nodes {
				select {
				case err := <-n.done:
					var ce *partition.CountError
					if !errors.As(err, &ce) {
						t.Errorf("Run(%s) = %v; want a *partition.CountError or running", name, err)
					}
					refused++
					delete(c.nodes, name)
				default:
				}
			}
			if refused == 0 {
				t.Errorf("members with 8 and 4 partitions started together both run; want at least one refused (owners %v)", c.owners())
			}
			for name, n := range c.nodes { // the one left, if any, owns its every partition
				if got, want := len(n.g.Snapshot().Owned), n.g.Config().Partitions; got != want {
					t.Errorf("%s owns %d partitions after the other refused; want all %d", name, got, want)
				}
			}
		})
	})
}

// TestGroupLeavesOutAnotherPartitionCount: a member that has settled does
// not refuse when a member with another count appears (one that does not
// refuse, here a bare membership announcing 4 partitions): it leaves it
// out of the assignment, keeps every partition, and claims none less.
func TestGroupLeavesOutAnotherPartitionCount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 8)
		defer c.close()
		c.start("a")
		c.await("a owns every partition", 5*time.Second, c.settled)
		ctx := context.Background()
		m, err := c.coord.JoinGroup(ctx, c.cfg.Key, "x#1", time.Hour, 4)
		if err != nil {
			t.Fatal(err)
		}
		for range 20 {
			if got := len(c.nodes["a"].g.Snapshot().Owned); got != 8 {
				t.Fatalf("a owns %d partitions beside a member announcing 4; want all 8", got)
			}
			time.Sleep(c.cfg.EffectiveDebounce() + 100*time.Millisecond)
		}
		if err := c.coord.LeaveGroup(ctx, m); err != nil {
			t.Fatal(err)
		}
		c.check()
	})
}
