package kube_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/partition"
)

// TestRenewedMemberWithDurationEditedByHand: the leaseDurationSeconds of
// live member a's membership Lease is set by hand to two days (no join
// writes more than a day). a then renews. Either that renewal is refused
// (a finds out and stops), or a is a live, renewing member and stays one:
// GroupMembers lists it, and whatever ListForeign lists and RemoveForeign
// frees, a keeps g/0 (CheckPartitions reports nothing lost) and b's claim
// of g/0 is refused.
func TestRenewedMemberWithDurationEditedByHand(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	ns := newNamespace(t, cs)
	c := newCoordinator(t, cs, ns)
	a, b := join(t, c, "a#1", 10*time.Second), join(t, c, "b#1", 10*time.Second)
	ga := claimOne(t, c, a, "0")
	editLease(t, cs, ns, memberLeaseName(a), func(l *coordv1.Lease) {
		d := int32(2 * 86400)
		l.Spec.LeaseDurationSeconds = &d
	})
	a, err := c.RenewMember(ctx(t), a)
	t.Logf("RenewMember(a) after its leaseDurationSeconds was set to two days = %v, %v", a, err)
	if errors.Is(err, tenure.ErrLost) || errors.Is(err, tenure.ErrRefused) {
		return // a finds out and stops: fine
	}
	if err != nil {
		t.Fatal(err)
	}
	ms, err := c.GroupMembers(ctx(t), "g")
	if err != nil || !slices.ContainsFunc(ms, func(m partition.Member) bool { return m.Epoch == a.Epoch }) {
		t.Errorf("GroupMembers(g) = %v, %v; want a, live and renewing, among them", ms, err)
	}
	for _, r := range listForeign(t, c, "") {
		ok, err := c.RemoveForeign(ctx(t), r)
		t.Logf("ListForeign: %+v; RemoveForeign = %v, %v", r, ok, err)
	}
	if lost, err := c.CheckPartitions(ctx(t), a, []tenure.Grant{ga}); err != nil || len(lost) != 0 {
		t.Errorf("CheckPartitions(a, g/0 at %d) = lost %v, %v; want nothing lost: a renewed %v ago", ga.Token, lost, err, time.Since(a.Sent.Time()).Round(time.Millisecond))
	}
	res, err := c.ClaimPartitions(ctx(t), b, []string{"0"})
	if err != nil || !errors.Is(res[0].Err, tenure.ErrHeld) {
		t.Errorf("claim of g/0 by b = %+v, %v; want it refused naming a, whose renewal says it holds its membership for %v more: two owners of one partition", res, err, a.TTL)
	}
}

// TestRenewedGrantWithDurationEditedByHand: the same for a single key's
// grant: h1 holds key "edited"; its Lease's leaseDurationSeconds is set by
// hand to two days (after h1's first renewal); h1 renews. Either the renewal is refused, or h1 is a
// live, renewing leader and stays one: whatever ListForeign lists and
// RemoveForeign frees, h1 renews again, and h2's Acquire is refused.
func TestRenewedGrantWithDurationEditedByHand(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	ns := newNamespace(t, cs)
	c := newCoordinator(t, cs, ns)
	g, err := c.Acquire(ctx(t), "edited", "h1#1", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// A renewal first, which binds the token in tenure.dev/token: an edit
	// before it is another (known) finding.
	if g, err = c.Renew(ctx(t), g); err != nil {
		t.Fatal(err)
	}
	editLease(t, cs, ns, "edited", func(l *coordv1.Lease) {
		d := int32(2 * 86400)
		l.Spec.LeaseDurationSeconds = &d
	})
	g, err = c.Renew(ctx(t), g)
	t.Logf("Renew(h1) after its leaseDurationSeconds was set to two days = %v, %v", g, err)
	if errors.Is(err, tenure.ErrLost) || errors.Is(err, tenure.ErrRefused) {
		return // h1 finds out and stops: fine
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range listForeign(t, c, "") {
		ok, err := c.RemoveForeign(ctx(t), r)
		t.Logf("ListForeign: %+v; RemoveForeign = %v, %v", r, ok, err)
	}
	if _, err := c.Renew(ctx(t), g); err != nil {
		t.Errorf("Renew(h1) = %v; want h1, live and renewing, still the leader (its last renewal told it %v)", err, g.TTL)
	}
	if g2, err := c.Acquire(ctx(t), "edited", "h2#1", 10*time.Second); err == nil {
		t.Errorf("Acquire(edited, h2) = %v; want it refused: h1's last renewal told it it leads for %v more: two leaders at once", g2, g.TTL)
	}
}
