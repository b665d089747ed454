package cli

import (
	"fmt"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/cmd/internal/bench"
	"github.com/tenure-dev/tenure/etcd"
	"github.com/tenure-dev/tenure/partition"
)

// tableRows formats tables as "group: name=owner ..." lines, "-" for an
// unowned partition, with the member count.
func tableRows(tables []partition.Table) []string {
	var out []string
	for _, t := range tables {
		s := fmt.Sprintf("%s (%d members):", t.Group, len(t.Members))
		for _, r := range t.Partitions {
			owner := r.Owner
			if owner == "" {
				owner = "-"
			}
			s += " " + r.Partition.Name + "=" + owner
		}
		out = append(out, s)
	}
	return out
}

// The groups under a prefix are found from the partition keys etcd lists;
// a key whose parent has no members is no group; every partition of the
// count the members announce is shown, owned or not (none announced: every
// number up to the highest owned); a group and its partitions stay shown,
// unowned, after they are released and the last member leaves (with
// --partitions names too); with --partitions names, those partitions are
// shown.
func TestGroupFinder(t *testing.T) {
	ctx := t.Context()
	srv, err := bench.StartEtcd(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c, err := etcd.Dial(ctx, etcd.Config{Endpoints: srv.Endpoints()})
	if err != nil {
		t.Fatalf("etcd.Dial() error = %v", err)
	}
	defer c.Close()
	if _, err := c.Acquire(ctx, "orders/1", "x#1", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	join := func(group, id string, p int, names ...string) (partition.Member, []partition.ClaimResult) {
		m, err := c.JoinGroup(ctx, group, id, 30*time.Second, p)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := c.ClaimPartitions(ctx, m, names)
		if err != nil || rs[0].Err != nil || rs[1].Err != nil {
			t.Fatalf("ClaimPartitions() = %+v, %v", rs, err)
		}
		return m, rs
	}
	m, rs := join("jobs", "a#1", 4, "0", "2")
	join("old", "b#1", 0, "1", "3") // announces no count (an older tenure)
	seen, fixed := &groupFinder{}, &groupFinder{names: partition.Names(3)}
	check := func(f *groupFinder, want ...string) {
		t.Helper()
		tables, err := f.list(ctx, c, "")
		if err != nil {
			t.Fatalf("tables() error = %v", err)
		}
		if got := tableRows(tables); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("tables() = %q; want %q", got, want)
		}
	}
	check(seen, "jobs (1 members): 0=a#1 1=- 2=a#1 3=-", "old (1 members): 0=- 1=b#1 2=- 3=b#1")
	check(fixed, "jobs (1 members): 0=a#1 1=- 2=a#1", "old (1 members): 0=- 1=b#1 2=-")

	if err := c.ReleasePartitions(ctx, m, []tenure.Grant{rs[1].Grant}); err != nil {
		t.Fatal(err)
	}
	check(seen, "jobs (1 members): 0=a#1 1=- 2=- 3=-", "old (1 members): 0=- 1=b#1 2=- 3=b#1")
	if err := c.LeaveGroup(ctx, m); err != nil {
		t.Fatal(err)
	}
	check(seen, "jobs (0 members): 0=- 1=- 2=- 3=-", "old (1 members): 0=- 1=b#1 2=- 3=b#1")
	check(fixed, "jobs (0 members): 0=- 1=- 2=-", "old (1 members): 0=- 1=b#1 2=-")
}
