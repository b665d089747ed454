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

// rowsOf formats a table's rows as "index:name=owner" ("-" when unowned).
func rowsOf(t partition.Table) string {
	var out []string
	for _, r := range t.Partitions {
		owner := r.Owner
		if owner == "" {
			owner = "-"
		}
		out = append(out, fmt.Sprintf("%d:%s=%s", r.Partition.Index, r.Partition.Name, owner))
	}
	return strings.Join(out, " ")
}

// TestReadGroupTable: read without being told the group's partitions, the
// table shows every partition of the count the members announce, owned or
// not, each with its own number (issue #21: partitions 0 and 2 unowned
// were hidden, and the others renumbered); a group with names of its own
// or members that announce nothing gives a partial table that says so.
func TestReadGroupTable(t *testing.T) {
	for _, tc := range []struct {
		name      string
		announce  []int // per member
		owned     [][]string
		want      string
		partial   bool
		unowned   int
		announced int
	}{
		{"announced", []int{8}, [][]string{{"1", "3", "4", "5", "6", "7"}},
			"0:0=- 1:1=a#1 2:2=- 3:3=a#1 4:4=a#1 5:5=a#1 6:6=a#1 7:7=a#1", false, 2, 8},
		{"disagreeing members", []int{8, 4}, [][]string{{"4", "5", "6", "7"}, {"1", "3"}},
			"0:0=- 1:1=b#1 2:2=- 3:3=b#1 4:4=a#1 5:5=a#1 6:6=a#1 7:7=a#1", false, 2, 8},
		{"names of its own", []int{3}, [][]string{{"us", "eu"}},
			"-1:eu=a#1 -1:us=a#1", true, 1, 3},
		{"nothing announced", []int{0}, [][]string{{"3", "1"}},
			"0:0=- 1:1=a#1 2:2=- 3:3=a#1", true, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := memory.New()
			defer c.Close()
			ctx := context.Background()
			for i, p := range tc.announce {
				m, err := c.JoinGroup(ctx, "jobs", fmt.Sprintf("%c#1", 'a'+i), time.Minute, p)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := c.ClaimPartitions(ctx, m, tc.owned[i]); err != nil {
					t.Fatal(err)
				}
			}
			tab, err := partition.ReadGroupTable(ctx, c, "jobs")
			if err != nil {
				t.Fatal(err)
			}
			if got := rowsOf(tab); got != tc.want {
				t.Errorf("rows = %s; want %s", got, tc.want)
			}
			if tab.Partial != tc.partial || tab.Stats.Unowned != tc.unowned || tab.Announced != tc.announced {
				t.Errorf("Partial %v, Unowned %d, Announced %d; want %v, %d, %d", tab.Partial, tab.Stats.Unowned, tab.Announced, tc.partial, tc.unowned, tc.announced)
			}
			for i, m := range tab.Members {
				if m.Partitions != tc.announce[i] {
					t.Errorf("member %s announced %d; want %d", m.ID, m.Partitions, tc.announce[i])
				}
			}
		})
	}
}
