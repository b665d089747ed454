package partition_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/memory"
	"github.com/tenure-dev/tenure/partition"
)

// TestTableTwinMemberships: two live memberships of one member ID (a
// process restarted under its identity while its old membership lives)
// are one member of the table, as they are one member to the assignment
// (Rebalance counts IDs): one row for the ID with the partitions it owns,
// the group's member count, cap and imbalance over member IDs; never a
// row per membership each counting the ID's partitions again.
func TestTableTwinMemberships(t *testing.T) {
	c := memory.New()
	defer c.Close()
	ctx := context.Background()
	join := func(id string) partition.Member {
		m, err := c.JoinGroup(ctx, "jobs", id, time.Minute, 6)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	claim := func(m partition.Member, names ...string) {
		res, err := c.ClaimPartitions(ctx, m, names)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
	}
	a := join("a#1")
	join("a#1") // its twin, owning nothing
	claim(a, "0", "1", "2")
	claim(join("b#1"), "3", "4", "5")
	for name, read := range map[string]func() (partition.Table, error){
		"ReadTable":      func() (partition.Table, error) { return partition.ReadTable(ctx, c, "jobs", partition.Names(6)) },
		"ReadGroupTable": func() (partition.Table, error) { return partition.ReadGroupTable(ctx, c, "jobs") },
	} {
		tab, err := read()
		if err != nil {
			t.Fatalf("%s() error = %v", name, err)
		}
		var rows []string
		for _, m := range tab.Members {
			rows = append(rows, fmt.Sprintf("%s owns %d", m.ID, m.Owned))
		}
		got := fmt.Sprintf("members [%s], %d members, cap %d, imbalance %.2f", strings.Join(rows, ", "), tab.Stats.Members, tab.Cap, tab.Stats.Imbalance)
		if want := "members [a#1 owns 3, b#1 owns 3], 2 members, cap 3, imbalance 1.00"; got != want {
			t.Errorf("%s() = %s; want %s", name, got, want)
		}
	}
}
