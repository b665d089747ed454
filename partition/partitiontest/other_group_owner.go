package partitiontest

import (
	"slices"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/partition"

	"github.com/tenure-dev/tenure"
)

// WithOwnerByHand gives the way an operator makes owner, a member of
// another group, the owner of partition name of group by hand on the
// backend (PostgreSQL: an UPDATE of the partition row's owner_epoch;
// Kubernetes: an edit of the partition Lease's holder and member
// annotation), and runs the OtherGroupsOwner check.
func WithOwnerByHand(own func(t *testing.T, group, name string, owner partition.Member)) Option {
	return func(o *options) { o.own = own }
}

// otherGroupsOwner checks a partition of group g made by hand the
// partition of x, a member of group h: it is no partition of x's (neither
// GroupPartitions(g) nor (h) lists it as x's), its former owner has lost
// it, and it does not wait for ever: another member of g claims it at once
// or, when the backend holds it while x lives, after RemoveForeign of the
// record ListForeign lists for it, with a greater token. x stays a member
// of h.
func (s suite) otherGroupsOwner(t *testing.T) {
	a, b := s.group(t), s.group(t)
	const ttl = 30 * time.Second // outlasts the check on a loaded machine
	base := groupName(t)
	g, h := base+"-g", base+"-h"
	m := joinFor(t, a, g, "owner#1", 2, ttl)
	owned := claimAll(t, a, m, "0")[0]
	x, o := joinFor(t, b, h, "x#1", 2, ttl), joinFor(t, b, g, "o#1", 2, ttl)
	s.o.own(t, g, "0", x)
	for _, group := range []string{g, h} {
		gs, err := b.GroupPartitions(ctx(t), group)
		if err != nil || slices.ContainsFunc(gs, func(gr tenure.Grant) bool { return gr.Holder == x.ID }) {
			t.Errorf("GroupPartitions(%q) = %s, %v; want none held by %s, a member of %q", group, grantList(gs), err, x.ID, h)
		}
	}
	if lost, err := a.CheckPartitions(ctx(t), renew(t, a, m), []tenure.Grant{owned}); err != nil || len(lost) != 1 {
		t.Errorf("CheckPartitions(%s) after its partition was given to %s by hand = %v, %v; want it lost", m, x.ID, lost, err)
	}
	r := claim(t, b, o, "0")[0]
	if r.Err != nil {
		s.removeForeignOf(t, b, owned.Key, x.ID)
		r = claim(t, b, o, "0")[0]
	}
	if r.Err != nil || r.Grant.Token <= owned.Token {
		t.Errorf("claim of %s, owned by hand by %s of %q = %+v, %v; want a grant with a token > %d, at once or after RemoveForeign", owned.Key, x.ID, h, r.Grant, r.Err, owned.Token)
	}
	x = renew(t, b, x)
	if ms, err := b.GroupMembers(ctx(t), h); err != nil || !slices.ContainsFunc(ms, func(y partition.Member) bool { return y.ID == x.ID && y.Epoch == x.Epoch }) {
		t.Errorf("GroupMembers(%q) = %s, %v; want %s still a member", h, memberList(ms), err, x.ID)
	}
}

// removeForeignOf removes the record of key held by holder that
// ListForeign(key) lists; it fails the test when there is none or it is
// not removed.
func (s suite) removeForeignOf(t *testing.T, c partition.Coordinator, key, holder string) {
	t.Helper()
	l, lists := c.(foreignLister)
	rm, removes := c.(foreignRemover)
	if !lists || !removes {
		t.Fatalf("claim of %s, owned by hand by %s of another group, refused on a coordinator without ListForeign and RemoveForeign: it waits for ever", key, holder)
	}
	for _, r := range foreignOf(t, l, key, holder) {
		if r.Key != key || r.Member != "" {
			continue
		}
		if removed, err := rm.RemoveForeign(ctx(t), r); !removed || err != nil {
			t.Fatalf("RemoveForeign(%+v) = %t, %v; want it removed", r, removed, err)
		}
		return
	}
	t.Fatalf("claim of %s, owned by hand by %s of another group, refused, and ListForeign(%q) lists no record of it: it waits for ever", key, holder, key)
}
