package etcd_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/partition"
)

// TestMemberIDsLikeKeys joins groups g and g/x with member IDs made of what
// the membership key is built from ('#', 16 hex digits, '/', a group's
// name) and a 256-byte one, each claiming one partition: each group's
// GroupMembers lists exactly its own memberships with their IDs and epochs,
// its GroupPartitions exactly its own claims, and a leave of one membership
// frees nothing of the others.
func TestMemberIDsLikeKeys(t *testing.T) {
	t.Parallel()
	c := newCoordinator(t, newClient(t, startEtcd(t)))
	ids := []string{"a", "a#b", "0000000000000001#a", "#", "a/b", "g/x", "g#", "0", strings.Repeat("z", 256)}
	groups := []string{"ids/g", "ids/g/x"}
	members := map[string][]partition.Member{}
	for _, g := range groups {
		for i, id := range ids {
			m, err := c.JoinGroup(ctx(t), g, id, time.Minute, len(ids))
			if err != nil {
				t.Fatalf("JoinGroup(%q, %q) error = %v", g, id, err)
			}
			res, err := c.ClaimPartitions(ctx(t), m, []string{fmt.Sprint(i)})
			if err != nil || res[0].Err != nil {
				t.Fatalf("ClaimPartitions(%s, %d) = %v, %v; want granted", m, i, res, err)
			}
			members[g] = append(members[g], m)
		}
	}
	check := func(when string) {
		t.Helper()
		for _, g := range groups {
			ms, err := c.GroupMembers(ctx(t), g)
			if err != nil {
				t.Fatalf("GroupMembers(%q) error = %v", g, err)
			}
			if got, want := memberSet(ms), memberSet(members[g]); got != want {
				t.Errorf("%s: GroupMembers(%q) = %s; want %s", when, g, got, want)
			}
			ps, err := c.GroupPartitions(ctx(t), g)
			if err != nil || len(ps) != len(members[g]) {
				t.Errorf("%s: GroupPartitions(%q) = %v, %v; want %d partitions", when, g, ps, err, len(members[g]))
			}
			for _, p := range ps {
				if !strings.HasPrefix(p.Key, g+"/") || strings.Contains(strings.TrimPrefix(p.Key, g+"/"), "/") {
					t.Errorf("%s: GroupPartitions(%q) lists %s", when, g, p)
				}
			}
		}
	}
	check("joined")
	gone := members["ids/g"][1] // "a#b" leaves g
	if err := c.LeaveGroup(ctx(t), gone); err != nil {
		t.Fatalf("LeaveGroup(%s) error = %v", gone, err)
	}
	members["ids/g"] = append(members["ids/g"][:1:1], members["ids/g"][2:]...)
	check("after a#b left g")
}

// memberSet renders ms as its sorted "ID@epoch" list.
func memberSet(ms []partition.Member) string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = fmt.Sprintf("%q@%x/%d", m.ID, m.Epoch, m.Partitions)
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}
