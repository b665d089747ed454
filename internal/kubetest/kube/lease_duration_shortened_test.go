package kube_test

import (
	"errors"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"

	"github.com/tenure-dev/tenure"
)

// A leaseDurationSeconds shortened by hand (`kubectl edit lease`) on a live
// Lease shortens every contender's wait: contenders, tenure's as
// client-go's, wait for the duration they read. docs/safety.md counts such
// an edit as an administrative removal and bounds it: the old holder learns
// at its next renewal, and its token is below the next holder's. These
// tests hold tenure to that bound; that a contender gets in early is what
// the edit does.

// TestGrantWithDurationShortenedByHand: the duration of h1's live Lease
// (TTL 30s, renewed once) is set to 1s. h2 may then be granted the key;
// its token is above h1's, and h1's next renewal reports it lost.
func TestGrantWithDurationShortenedByHand(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	ns := newNamespace(t, cs)
	c1, c2 := newCoordinator(t, cs, ns), newCoordinator(t, cs, ns)
	g1, err := c1.Acquire(ctx(t), "shortened", "h1#1", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if g1, err = c1.Renew(ctx(t), g1); err != nil {
		t.Fatal(err)
	}
	editLease(t, cs, ns, "shortened", func(l *coordv1.Lease) {
		d := int32(1)
		l.Spec.LeaseDurationSeconds = &d
	})
	var g2 tenure.Grant
	for began := time.Now(); ; time.Sleep(200 * time.Millisecond) {
		if g2, err = c2.Acquire(ctx(t), "shortened", "h2#1", 30*time.Second); err == nil {
			break
		}
		if time.Since(began) > 20*time.Second {
			t.Fatalf("Acquire(shortened, h2) after the duration was edited to 1s: still refused after 20s (%v); want granted once the edited duration ran out", err)
		}
	}
	if g2.Token <= g1.Token {
		t.Errorf("h2's grant %v after the edit: token not above h1's %v", g2, g1)
	}
	if _, err := c1.Renew(ctx(t), g1); !errors.Is(err, tenure.ErrLost) {
		t.Errorf("h1's renewal after h2 was granted the key = %v; want tenure.ErrLost", err)
	}
}

// TestMembershipWithDurationShortenedByHand: as
// TestGrantWithDurationShortenedByHand, for member a's membership Lease
// (TTL 30s, renewed once) while a owns g/0: b's claim of g/0 may then be
// granted; its token is above a's, and a's next check of g/0 reports it
// lost.
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
	var gb tenure.Grant
	for began := time.Now(); ; time.Sleep(200 * time.Millisecond) {
		b = renewMember(t, cb, b)
		res, err := cb.ClaimPartitions(ctx(t), b, []string{"0"})
		if err == nil && res[0].Err == nil {
			gb = res[0].Grant
			break
		}
		if time.Since(began) > 20*time.Second {
			t.Fatalf("b's claim of g/0 after a's membership duration was edited to 1s: still refused after 20s (%v, %+v); want granted once the edited duration ran out", err, res)
		}
	}
	if gb.Token <= ga.Token {
		t.Errorf("b's grant %v of g/0 after the edit: token not above a's %v", gb, ga)
	}
	_, rerr := ca.RenewMember(ctx(t), a)
	lost, cerr := ca.CheckPartitions(ctx(t), a, []tenure.Grant{ga})
	if !errors.Is(rerr, tenure.ErrLost) && (cerr != nil || len(lost) != 1) {
		t.Errorf("a after b's claim of g/0: RenewMember = %v, CheckPartitions = lost %v, %v; want the membership or g/0 told lost", rerr, lost, cerr)
	}
}
