package partitiontest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/partition"

	"github.com/tenure-dev/tenure"
)

// nameGroups are the groups of the Names checks, under base: groups nested
// in one another (g, g/x, g/x/y), one named like a partition key of g
// (g/0), and some that differ from g by one character of those a key may
// contain (g-x, g.x, g_x, G, g0).
func nameGroups(base string) []string {
	var out []string
	for _, g := range []string{"g", "g/x", "g/x/y", "g/0", "g-x", "g.x", "g_x", "G", "g0"} {
		out = append(out, base+"/"+g)
	}
	return out
}

// nameTTL is the memberships' TTL in the Names check: it joins 18 and
// claims 45 partitions, which takes seconds on a loaded machine, and
// renews none.
const nameTTL = time.Minute

// nameParts are the partition names the Names check claims: x, named like
// the group g/x below g (and y, like g/x/y below g/x), X, which differs from
// x only in case (each owned by another member), and names with every
// character a key may contain.
var nameParts = []string{"x", "y", "0", "y.z", "X", "Y_Z-9", "-", "_", "a.b-c_D"}

// names checks that groups whose names nest in, extend or resemble one
// another, and single keys named like their partitions and like groups,
// never see one another: each group's GroupMembers lists only its own
// memberships (one member ID is a member of every group), with the
// partition count each announced (nested groups announce different ones), and its
// GroupPartitions only its own members' partitions; a group's leave frees
// only its own; the single grants stay as they were.
func (s suite) names(t *testing.T) {
	base := groupName(t)
	groups := nameGroups(base)
	c := make([]partition.Coordinator, len(groups))
	want := make([]groupView, len(groups))
	for i, g := range groups {
		c[i] = s.group(t)
		p := len(nameParts) - i%len(nameParts)
		m := joinFor(t, c[i], g, "m#1", p, nameTTL)
		n := joinFor(t, c[i], g, fmt.Sprintf("n#%d", i), p, nameTTL)
		want[i] = groupView{members: []partition.Member{m, n}}
		want[i].parts = append(claimAll(t, c[i], m, nameParts[:p/2]...), claimAll(t, c[i], n, nameParts[p/2:p]...)...)
	}
	single := s.group(t)
	var singles []tenure.Grant
	for _, key := range []string{base + "/g", base + "/g/single", base + "/g-x", base + "/g/x/y/z", base + "/g/x/members"} {
		g, err := single.Acquire(ctx(t), key, "m#1", time.Minute)
		if err != nil {
			t.Fatalf("Acquire(%q), a single key named like a group or its partitions: %v; want a grant", key, err)
		}
		singles = append(singles, g)
	}
	for i, g := range groups {
		want[i].check(t, c[(i+1)%len(c)], g)
	}
	gone := 1 // g/x leaves: its memberships and partitions, nobody else's
	for _, m := range want[gone].members {
		if err := c[gone].LeaveGroup(ctx(t), m); err != nil {
			t.Fatalf("LeaveGroup(%s) error = %v", m, err)
		}
	}
	want[gone] = groupView{}
	for i, g := range groups {
		want[i].check(t, single, g)
	}
	for _, g := range singles {
		if _, err := single.Renew(ctx(t), g); err != nil {
			t.Errorf("Renew(%s), a single grant beside the groups: %v; want it renewed", g, err)
		}
	}
}

// groupView is what GroupMembers and GroupPartitions of a group should
// report.
type groupView struct {
	members []partition.Member
	parts   []tenure.Grant
}

// check compares what c reports of group with v: the same memberships (ID,
// epoch, announced count) and the same partitions (key, holder, token).
func (v groupView) check(t *testing.T, c partition.Coordinator, group string) {
	t.Helper()
	ms, err := c.GroupMembers(ctx(t), group)
	if err != nil {
		t.Fatalf("GroupMembers(%q) error = %v", group, err)
	}
	if got, want := memberList(ms), memberList(v.members); got != want {
		t.Errorf("GroupMembers(%q) = %s; want %s", group, got, want)
	}
	gs, err := c.GroupPartitions(ctx(t), group)
	if err != nil {
		t.Fatalf("GroupPartitions(%q) error = %v", group, err)
	}
	if got, want := grantList(gs), grantList(v.parts); got != want {
		t.Errorf("GroupPartitions(%q) = %s; want %s", group, got, want)
	}
}

// memberList formats memberships as "ID@epoch=P", sorted.
func memberList(ms []partition.Member) string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, fmt.Sprintf("%s@%d=%d", m.ID, m.Epoch, m.Partitions))
	}
	slices.Sort(out)
	return "[" + strings.Join(out, " ") + "]"
}

// grantList formats grants as "key:holder@token", sorted.
func grantList(gs []tenure.Grant) string {
	out := make([]string, 0, len(gs))
	for _, g := range gs {
		out = append(out, fmt.Sprintf("%s:%s@%d", g.Key, g.Holder, g.Token))
	}
	slices.Sort(out)
	return "[" + strings.Join(out, " ") + "]"
}

// claimAll claims free partitions names for m and returns the grants.
func claimAll(t *testing.T, c partition.Coordinator, m partition.Member, names ...string) []tenure.Grant {
	t.Helper()
	if len(names) == 0 {
		return nil
	}
	var out []tenure.Grant
	for i, r := range claim(t, c, m, names...) {
		if r.Err != nil {
			t.Fatalf("%s's claim of free partition %s of %q = %v; want a grant", m.ID, names[i], m.Group, r.Err)
		}
		out = append(out, r.Grant)
	}
	return out
}

// nestedGroups checks that groups nested in one another run side by side,
// each with its own partition count: a member of g/x/y is no member of
// g/x or g, so none refuses to run (a *partition.CountError) or leaves
// partitions unowned because of another group's members. The innermost
// group starts first, so that the outer ones see its members as they
// join, when a member refuses another count.
func (s suite) nestedGroups(t *testing.T) {
	ttl := 10 * time.Second
	base := groupName(t)
	var fleets []*fleet
	for i, g := range []struct {
		name string
		p    int
	}{{"g/x/y", 4}, {"g/x", 8}, {"g", 4}, {"g-x", 6}} {
		f := s.fleet(t, g.p, ttl)
		f.cfg.Key = base + "/" + g.name
		f.start("a")
		f.start(fmt.Sprintf("b%d", i))
		f.await(fmt.Sprintf("group %s (%d partitions) settles beside the groups started before it", g.name, g.p), ttl+s.o.slack, f.settled)
		fleets = append(fleets, f)
	}
	for _, f := range fleets {
		if !f.settled() {
			t.Errorf("group %s no longer settled once every group runs: owners %v", f.cfg.Key, f.owners())
		}
		f.stopAll()
		f.checkTokens()
	}
}
