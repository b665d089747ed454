//go:build openfinding

// Open finding (review of names, identities and foreign records): a
// leaseDurationSeconds shortened by hand on a live Lease (a key's grant or
// a membership) shortens every contender's wait: another holder was
// granted the key 1.07s after the edit, 28.9s before h1's grant ended by
// its TTL, and another member's claim of a live member's partition was
// granted 1.12s after the edit. The old holder learns it at its next
// renewal (its update is refused), and its token is below the new one's:
// the bound docs/safety.md gives for a deleted Lease, but neither it nor
// docs/kubernetes.md ("a duration edited by hand changes no holder's
// deadline") says an edit of the duration is such a removal.

package kube_test

import (
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
)

// TestGrantWithDurationShortenedByHand: the leaseDurationSeconds of h1's
// live Lease (TTL 30s, renewed once, so its token is bound) is set by hand
// to 1s, as `kubectl edit lease` can. docs/kubernetes.md: a duration
// edited by hand changes no holder's deadline. No contender may then be
// granted the Lease before h1's grant ends by its own TTL (h1.Sent + TTL):
// h1 acts until then, or until its next renewal finds the Lease taken.
func TestGrantWithDurationShortenedByHand(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	ns := newNamespace(t, cs)
	c1, c2 := newCoordinator(t, cs, ns), newCoordinator(t, cs, ns)
	g, err := c1.Acquire(ctx(t), "shortened", "h1#1", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if g, err = c1.Renew(ctx(t), g); err != nil {
		t.Fatal(err)
	}
	editLease(t, cs, ns, "shortened", func(l *coordv1.Lease) {
		d := int32(1)
		l.Spec.LeaseDurationSeconds = &d
	})
	edited := time.Now()
	for ends := g.Sent.Add(g.TTL); ends.Until() > 0; time.Sleep(200 * time.Millisecond) {
		if g2, err := c2.Acquire(ctx(t), "shortened", "h2#1", 30*time.Second); err == nil {
			t.Fatalf("Acquire(shortened, h2) = %v, %s after the edit and %s before h1's grant %v ends by its TTL: two holders at once", g2, time.Since(edited).Round(time.Millisecond), ends.Until().Round(time.Millisecond), g)
		}
	}
}

// TestMembershipWithDurationShortenedByHand: as
// TestGrantWithDurationShortenedByHand, for member a's membership Lease
// (TTL 30s, renewed once) while a owns g/0: no other member's claim of g/0
// may be granted before a's membership ends by its own TTL (a.Sent + TTL).
func TestMembershipWithDurationShortenedByHand(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	ns := newNamespace(t, cs)
	ca, cb := newCoordinator(t, cs, ns), newCoordinator(t, cs, ns)
	a := join(t, ca, "a#1", 30*time.Second)
	ga := claimOne(t, ca, a, "0")
	a = renewMember(t, ca, a)
	b := join(t, cb, "b#1", 30*time.Second)
	editLease(t, cs, ns, memberLeaseName(a), func(l *coordv1.Lease) {
		d := int32(1)
		l.Spec.LeaseDurationSeconds = &d
	})
	edited := time.Now()
	for ends := a.Sent.Add(a.TTL); ends.Until() > 0; time.Sleep(200 * time.Millisecond) {
		b = renewMember(t, cb, b)
		res, err := cb.ClaimPartitions(ctx(t), b, []string{"0"})
		if err == nil && res[0].Err == nil {
			t.Fatalf("b's claim of g/0 = %v, %s after the edit and %s before a's membership (owner of %v) ends by its TTL: two owners at once", res[0].Grant, time.Since(edited).Round(time.Millisecond), ends.Until().Round(time.Millisecond), ga)
		}
	}
}
