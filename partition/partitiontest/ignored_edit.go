package partitiontest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/partition"

	"github.com/tenure-dev/tenure"
)

// WithIgnoredEdit gives an edit by hand of what the backend writes for
// people and never decides by (Kubernetes: the labels of member m's
// membership Lease and of the Lease of its partition owned, removed or
// changed), and runs the IgnoredEdit check.
func WithIgnoredEdit(edit func(t *testing.T, m partition.Member, owned tenure.Grant)) Option {
	return func(o *options) { o.ignored = edit }
}

// ignoredEdit checks that after the edit of member m, which owns a
// partition, nothing changed: another member's claim of it is refused
// with a *tenure.HeldError naming m, at once and after m renewed, and a
// single-key Acquire of its key is refused, also after the partition's
// record has gone unwritten for longer than m's TTL; m renews and still
// owns it; the group lists both members and the partition as m's with its
// token; ListForeign lists nothing of m's.
func (s suite) ignoredEdit(t *testing.T) {
	a, b := s.group(t), s.group(t)
	g := groupName(t)
	m := s.joinWith(t, a, g, "edited#1", 2)
	owned := claimAll(t, a, m, "0")[0]
	o := joinFor(t, b, g, "other#1", 2, time.Minute)
	// As a running member does at every renewal.
	m = renew(t, a, m) // its join, claim and another's join can outlive a short TTL on a loaded machine
	if lost, err := a.CheckPartitions(ctx(t), m, []tenure.Grant{owned}); err != nil || len(lost) != 0 {
		t.Fatalf("CheckPartitions(%s) = %v, %v; want %s its own", m, lost, err, owned.Key)
	}
	s.o.ignored(t, m, owned)
	var held *tenure.HeldError
	if r := claim(t, b, o, "0")[0]; !errors.As(r.Err, &held) || held.Holder != m.ID {
		t.Errorf("claim of %s, %s's, right after an edit the backend ignores = %+v, %v; want a *tenure.HeldError naming it", owned.Key, m.ID, r.Grant, r.Err)
	}
	if _, err := b.Acquire(ctx(t), owned.Key, "single#1", s.o.ttl); err == nil {
		t.Errorf("Acquire(%q) of %s's partition after an edit the backend ignores = nil error; want refused", owned.Key, m.ID)
	}
	// The partition's record is written only when its owner changes: past
	// its TTL unwritten, it lives by m's renewals alone.
	for start := time.Now(); time.Since(start) < s.o.ttl*11/10; time.Sleep(s.o.ttl / 4) {
		m = renew(t, a, m)
	}
	if lost, err := a.CheckPartitions(ctx(t), m, []tenure.Grant{owned}); err != nil || len(lost) != 0 {
		t.Errorf("CheckPartitions(%s) after an edit the backend ignores = %v, %v; want %s still its own", m, lost, err, owned.Key)
	}
	m = renew(t, a, m)
	if r := claim(t, b, o, "0")[0]; !errors.As(r.Err, &held) || held.Holder != m.ID {
		t.Errorf("claim of %s, %s's, after an edit the backend ignores = %+v, %v; want a *tenure.HeldError naming it", owned.Key, m.ID, r.Grant, r.Err)
	}
	if _, err := b.Acquire(ctx(t), owned.Key, "single#1", s.o.ttl); err == nil {
		t.Errorf("Acquire(%q) of %s's partition, unwritten for its TTL, after an edit the backend ignores = nil error; want refused", owned.Key, m.ID)
	}
	ms, err := b.GroupMembers(ctx(t), g)
	if err != nil || !slices.ContainsFunc(ms, func(x partition.Member) bool { return x.ID == m.ID && x.Epoch == m.Epoch }) {
		t.Errorf("GroupMembers(%q) = %s, %v; want %s listed", g, memberList(ms), err, m.ID)
	}
	gs, err := b.GroupPartitions(ctx(t), g)
	if err != nil || !slices.ContainsFunc(gs, func(x tenure.Grant) bool { return x.Key == owned.Key && x.Holder == m.ID && x.Token == owned.Token }) {
		t.Errorf("GroupPartitions(%q) = %s, %v; want %s of %s at token %d", g, grantList(gs), err, owned.Key, m.ID, owned.Token)
	}
	if l, ok := b.(foreignLister); ok {
		if rs := foreignOf(t, l, "", m.ID); len(rs) != 0 {
			t.Errorf("ListForeign(\"\") = %+v after an edit the backend ignores; want none of %s's, a live member", rs, m.ID)
		}
	}
}
