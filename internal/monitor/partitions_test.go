package monitor_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/monitor"
	"github.com/tenure-dev/tenure/memory"
	"github.com/tenure-dev/tenure/partition"
	"github.com/tenure-dev/tenure/partition/partitiontest"
)

// member runs a member name#name of group "jobs" with 4 partitions on c
// until the returned stop is called.
func member(t *testing.T, c tenure.Coordinator, name string) (g *partition.Group, stop func()) {
	t.Helper()
	cfg := partition.DefaultConfig()
	cfg.Key, cfg.Partitions, cfg.Holder, cfg.Instance = "jobs", 4, name, name
	return partitiontest.RunMember(t, c, cfg)
}

// owners returns the holder of each row of s's partition table, "" when
// unowned, and how many rows are this instance's.
func owners(t *testing.T, s monitor.Status) (holders []string, mine int) {
	t.Helper()
	for _, p := range s.Partitions {
		holders = append(holders, p.Holder)
		if p.Mine {
			mine++
		}
		if p.Held != (p.Holder != "") || p.Held != (p.Token > 0) || p.Held != (p.LeaseLeftMs != nil) || p.Held == (p.UnownedMs != nil) {
			t.Errorf("/status partition row %+v: held, holder, token, lease left and unowned time disagree", p)
		}
	}
	return holders, mine
}

// A member's monitor shows its group's partition table in /status: every
// partition unowned (and for how long) before anyone joins, then owned by
// the two members with tokens and lease left, then by the survivor alone
// once the other is cut off and its lease has expired; /leader answers
// whether this member owns a partition.
func TestPartitionTableInStatus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := memory.New()
		defer c.Close()
		var self *partition.Group
		names := partition.Names(4)
		mon := newMonitor(t, c, monitor.Config{
			PartitionsOnly: true, Identity: "a#a",
			Partitions: func(ctx context.Context, _ []tenure.Grant) ([]partition.Table, error) {
				tb, err := partition.ReadTable(ctx, c, "jobs", names)
				return []partition.Table{tb}, err
			},
			Leading: func() bool { return self != nil && len(self.Snapshot().Owned) > 0 },
		})
		h := mon.Handler()
		time.Sleep(time.Second)
		s := status(t, h)
		if holders, _ := owners(t, s); len(holders) != 4 || len(s.Groups) != 1 || s.Groups[0].Unowned != 4 || len(s.Keys) != 0 {
			t.Fatalf("/status before any member: %d rows, groups %+v, %d keys; want 4 unowned rows of one group and no keys", len(holders), s.Groups, len(s.Keys))
		}
		if u := s.Partitions[0].UnownedMs; u == nil || *u < 900 {
			t.Errorf("/status unowned_ms after 1s unowned = %v; want ≥ 900", u)
		}
		if code, _ := get(t, h, "/leader"); code != http.StatusServiceUnavailable {
			t.Errorf("/leader owning nothing = %d; want 503", code)
		}

		self, stopA := member(t, c, "a")
		defer stopA()
		_, stopB := member(t, c, "b")
		defer stopB()
		time.Sleep(5 * time.Second)
		s = status(t, h)
		holders, mine := owners(t, s)
		g := s.Groups[0]
		if g.Members != 2 || g.Unowned != 0 || g.Cap != 2 || g.Imbalance != 1 || mine != 2 || s.Role != "leader" {
			t.Errorf("/status with two members: group %+v, owners %q, %d mine, role %q; want 2 members, 2 each, 2 mine, leader", g, holders, mine, s.Role)
		}
		if code, _ := get(t, h, "/leader"); code != http.StatusOK {
			t.Errorf("/leader owning partitions = %d; want 200", code)
		}

		c.Partition("b") // b's lease runs out; a takes its partitions
		time.Sleep(20 * time.Second)
		s = status(t, h)
		if holders, mine := owners(t, s); mine != 4 || s.Groups[0].Members != 1 {
			t.Errorf("/status after b was cut off: owners %q, %d mine, group %+v; want all 4 owned by a, 1 member", holders, mine, s.Groups[0])
		}
		c.Heal("b")
	})
}

// A partition table that cannot be read is reported in /status, and the
// keys are still shown.
func TestPartitionReadError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := memory.New()
		defer c.Close()
		if _, err := c.Acquire(t.Context(), "jobs", "x#1", time.Minute); err != nil {
			t.Fatal(err)
		}
		errRead := errors.New("table unreadable")
		h := newMonitor(t, c, monitor.Config{Keys: []string{"jobs"},
			Partitions: func(context.Context, []tenure.Grant) ([]partition.Table, error) { return nil, errRead }}).Handler()
		time.Sleep(time.Second)
		s := status(t, h)
		if s.Error != errRead.Error() || len(s.Keys) != 1 || s.Keys[0].Holder != "x" || len(s.Partitions) != 0 {
			t.Errorf("/status = error %q, keys %+v, %d partitions; want %q, jobs held by x, none", s.Error, s.Keys, len(s.Partitions), errRead)
		}
	})
}
