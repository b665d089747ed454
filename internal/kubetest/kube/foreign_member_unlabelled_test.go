//go:build openfinding

package kube_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/kube"
)

// TestMembershipLeaseUnlabelledKeepsPartitions: a membership Lease whose
// role label someone removed is still renewed by its member, which owns
// the partition it claimed as CheckPartitions reads it; another member's
// claim is refused that partition while the membership lives, as a
// membership moved by hand is on PostgreSQL.
func TestMembershipLeaseUnlabelledKeepsPartitions(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	ns := newNamespace(t, cs)
	c := newCoordinator(t, cs, ns)
	leases := cs.CoordinationV1().Leases(ns)
	alice, err := c.JoinGroup(ctx(t), "g", "alice#00000001", 10*time.Second, 2)
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.JoinGroup(ctx(t), "g", "mallory#00000000", 10*time.Second, 2)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.ClaimPartitions(ctx(t), m, []string{"0"})
	if err != nil || res[0].Err != nil {
		t.Fatalf("ClaimPartitions(mallory, g/0) = %+v, %v", res, err)
	}
	held := res[0].Grant
	ls, err := leases.List(ctx(t), metav1.ListOptions{LabelSelector: kube.LabelRole + "=member"})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls.Items {
		if l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == m.ID {
			delete(l.Labels, kube.LabelRole)
			if _, err := leases.Update(ctx(t), &l, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if m, err = c.RenewMember(ctx(t), m); err != nil {
		t.Fatalf("RenewMember(mallory) after the label's removal = %v", err)
	}
	if lost, err := c.CheckPartitions(ctx(t), m, []tenure.Grant{held}); err != nil || len(lost) != 0 {
		t.Fatalf("CheckPartitions(mallory) = %v, %v; want g/0 still held", lost, err)
	}
	res, err = c.ClaimPartitions(ctx(t), alice, []string{"0"})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Err == nil {
		t.Errorf("ClaimPartitions(alice, g/0) = %+v while mallory, just renewed, holds it at token %d", res[0].Grant, held.Token)
	}
}
