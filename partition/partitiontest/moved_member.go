package partitiontest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/partition"

	"github.com/tenure-dev/tenure"
)

// WithMovedMembership gives the way an operator moves the membership
// record of m to group to by hand on the backend (PostgreSQL: an UPDATE of
// the row's grp; Kubernetes: an edit of its Lease's group label and
// annotation), and runs the MovedMembership check. kept is the
// backend's rule for the member whose record moved: true when it stays a
// member of its own group (its renewals go on and it keeps its
// partitions), false when it is told (RenewMember fails with
// tenure.ErrLost, and it is no member of any group).
func WithMovedMembership(move func(t *testing.T, m partition.Member, to string), kept bool) Option {
	return func(o *options) { o.move, o.kept = move, kept }
}

// movedMembership checks a membership record of member m of group g moved
// by hand to group h, where x is a member: it is no member of h
// (GroupMembers(h) lists x alone, and GroupPartitions(h) nothing of m's);
// m follows the backend's rule (kept: m renews, is listed in g and keeps
// its partition; told: RenewMember fails with ErrLost and g no longer
// lists m); ListForeign(g) or ListForeign(h) lists a record of m's;
// RemoveForeign of those frees them (no record of m's is listed
// afterwards; told: the partition is claimed by another member with a
// greater token) and leaves x a member of h.
func (s suite) movedMembership(t *testing.T) {
	a, b := s.group(t), s.group(t)
	l, lists := a.(foreignLister)
	rm, removes := a.(foreignRemover)
	if !lists || !removes {
		t.Fatalf("WithMovedMembership given for a coordinator without ListForeign and RemoveForeign")
	}
	const ttl = 30 * time.Second // outlasts the check on a loaded machine
	base := groupName(t)
	g, h := base+"-g", base+"-h"
	m := joinFor(t, a, g, "moved#1", 2, ttl)
	owned := claimAll(t, a, m, "0")
	x, o := joinFor(t, b, h, "x#1", 2, ttl), joinFor(t, b, g, "o#1", 2, ttl)
	s.o.move(t, m, h)
	s.checkNotIn(t, b, h, m, x)
	s.checkMovedRule(t, a, b, m, owned[0])
	var found []tenure.ForeignRecord
	for _, prefix := range []string{g, h} {
		found = append(found, foreignOf(t, l, prefix, m.ID)...)
	}
	if len(found) == 0 {
		t.Fatalf("ListForeign(%q) and ListForeign(%q) list no record of %s after its membership record moved to %q; want it listed", g, h, m.ID, h)
	}
	removed := false
	for _, r := range found {
		ok, err := rm.RemoveForeign(ctx(t), r)
		if err != nil {
			t.Errorf("RemoveForeign(%+v) error = %v", r, err)
		}
		removed = removed || ok
	}
	if !removed {
		t.Errorf("RemoveForeign of %+v removed nothing; want the moved membership record freed", found)
	}
	for _, prefix := range []string{g, h} {
		if rest := foreignOf(t, l, prefix, m.ID); len(rest) > 0 {
			t.Errorf("ListForeign(%q) after RemoveForeign = %+v; want no record of %s", prefix, rest, m.ID)
		}
	}
	s.checkNotIn(t, b, h, m, renew(t, b, x))
	if !s.o.kept {
		if r := claim(t, b, o, "0")[0]; r.Err != nil || r.Grant.Token <= owned[0].Token {
			t.Errorf("claim of %s after RemoveForeign freed the moved membership = %+v, %v; want a grant with a token > %d", owned[0].Key, r.Grant, r.Err, owned[0].Token)
		}
	}
}

// checkNotIn checks that group h lists x alone, and no partition of m's.
func (s suite) checkNotIn(t *testing.T, c partition.Coordinator, h string, m, x partition.Member) {
	t.Helper()
	ms, err := c.GroupMembers(ctx(t), h)
	if err != nil || len(ms) != 1 || ms[0].ID != x.ID || ms[0].Epoch != x.Epoch {
		t.Errorf("GroupMembers(%q) = %s, %v; want %s alone: %s's record moved there is no member", h, memberList(ms), err, x.ID, m.ID)
	}
	gs, err := c.GroupPartitions(ctx(t), h)
	if err != nil || slices.ContainsFunc(gs, func(g tenure.Grant) bool { return g.Holder == m.ID }) {
		t.Errorf("GroupPartitions(%q) = %s, %v; want none held by %s", h, grantList(gs), err, m.ID)
	}
}

// checkMovedRule checks the backend's rule for m, whose membership record
// moved to another group: kept, m renews, g lists it and it keeps owned;
// told, RenewMember fails with ErrLost and g does not list m.
func (s suite) checkMovedRule(t *testing.T, a, b partition.Coordinator, m partition.Member, owned tenure.Grant) {
	t.Helper()
	ms, err := b.GroupMembers(ctx(t), m.Group)
	if err != nil {
		t.Fatalf("GroupMembers(%q) error = %v", m.Group, err)
	}
	listed := slices.ContainsFunc(ms, func(x partition.Member) bool { return x.ID == m.ID && x.Epoch == m.Epoch })
	if s.o.kept {
		r, err := a.RenewMember(ctx(t), m)
		if err != nil || !listed {
			t.Errorf("after its record moved: RenewMember(%s) error = %v, GroupMembers(%q) = %s; want it still a member of its group (the backend's rule)", m, err, m.Group, memberList(ms))
			return
		}
		if lost, err := a.CheckPartitions(ctx(t), r, []tenure.Grant{owned}); err != nil || len(lost) != 0 {
			t.Errorf("CheckPartitions(%s) after its record moved = %v, %v; want %s still its own", m, lost, err, owned.Key)
		}
		return
	}
	if _, err := a.RenewMember(ctx(t), m); !errors.Is(err, tenure.ErrLost) || listed {
		t.Errorf("after its record moved: RenewMember(%s) error = %v, GroupMembers(%q) = %s; want ErrLost and it not listed (the backend's rule)", m, err, m.Group, memberList(ms))
	}
}

// foreignOf returns the records ListForeign(prefix) lists that name id as
// their holder or member.
func foreignOf(t *testing.T, l foreignLister, prefix, id string) []tenure.ForeignRecord {
	t.Helper()
	rs, err := l.ListForeign(ctx(t), prefix)
	if err != nil {
		t.Fatalf("ListForeign(%q) error = %v", prefix, err)
	}
	var out []tenure.ForeignRecord
	for _, r := range rs {
		if r.Holder == id || r.Member == id {
			out = append(out, r)
		}
	}
	return out
}
