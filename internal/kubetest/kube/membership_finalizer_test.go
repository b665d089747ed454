package kube_test

import (
	"context"
	"errors"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenure-dev/tenure"
)

// TestMembershipDeleteHeldByFinalizer: another program put a finalizer on
// member a's membership Lease, so the delete by which a claimer ends a's
// expired membership only marks the Lease terminating (it stays, at a new
// resourceVersion, until the finalizer goes). The claimer b still takes
// a's partition. a's membership is over all the same ("after the delete the
// owner can never renew, even through a coordinator that never saw it
// expire", package kube): a's renewal through a coordinator that never saw
// it expire is told lost, and so is its check. Before the fix the renewal
// succeeded (the Lease still stood) and revived the membership; a's check
// and claim then found g/0 b's, so b's grant was never shared.
func TestMembershipDeleteHeldByFinalizer(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	ns := newNamespace(t, cs)
	leases := cs.CoordinationV1().Leases(ns)
	ca, cb := newCoordinator(t, cs, ns), newCoordinator(t, cs, ns)
	const ttl = 2 * time.Second
	a := join(t, ca, "a#1", ttl)
	ga := claimOne(t, ca, a, "0")
	name := memberLeaseName(a)
	editLease(t, cs, ns, name, func(l *coordv1.Lease) { l.Finalizers = append(l.Finalizers, "example.com/keep") })
	t.Cleanup(func() { // let the Lease go
		c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if l, err := leases.Get(c, name, metav1.GetOptions{}); err == nil {
			l.Finalizers = nil
			if _, err := leases.Update(c, l, metav1.UpdateOptions{}); err != nil {
				t.Errorf("remove the finalizer of %s: %v", name, err)
			}
		}
	})
	b := join(t, cb, "b#1", 30*time.Second)
	if ms, err := cb.GroupMembers(ctx(t), "g"); err != nil || len(ms) != 2 { // b has seen a's membership
		t.Fatalf("GroupMembers(g) = %v, %v; want a and b", ms, err)
	}
	time.Sleep(ttl + ttl/100 + 100*time.Millisecond) // a never renews
	gb := claimOne(t, cb, b, "0")
	if gb.Token <= ga.Token {
		t.Fatalf("b's claim of g/0 over a's expired membership: token %d; want > %d", gb.Token, ga.Token)
	}
	l, err := leases.Get(ctx(t), name, metav1.GetOptions{})
	if err != nil || l.DeletionTimestamp == nil {
		t.Fatalf("a's membership Lease after b's claim = %v; want it terminating (held by its finalizer)", err)
	}
	restarted := newCoordinator(t, cs, ns) // never saw a's membership expire
	if ra, err := restarted.RenewMember(ctx(t), a); !errors.Is(err, tenure.ErrLost) {
		t.Fatalf("RenewMember(a) through a coordinator that never saw it expire, its Lease deleted (terminating) = %v, %v; want tenure.ErrLost", ra, err)
	}
	if lost, err := restarted.CheckPartitions(ctx(t), a, []tenure.Grant{ga}); !errors.Is(err, tenure.ErrLost) {
		t.Fatalf("a's CheckPartitions(g/0), its membership Lease deleted (terminating) = lost %v, %v; want tenure.ErrLost", lost, err)
	}
	if lost, err := cb.CheckPartitions(ctx(t), b, []tenure.Grant{gb}); err != nil || len(lost) != 0 {
		t.Fatalf("b's CheckPartitions(g/0) = lost %v, %v; want still b's", lost, err)
	}
}
