//go:build openfinding

package kube_test

import (
	"errors"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/kube"
)

// TestKeyLeaseWithMemberLabel: a key's Lease written by hand with a group
// role label (member or partition) but none of the group's annotations,
// expired, makes Acquire of the key fail; ListForeign lists a record for
// it, and RemoveForeign of the records it lists lets Acquire take the key.
func TestKeyLeaseWithMemberLabel(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	ns := newNamespace(t, cs)
	c := newCoordinator(t, cs, ns)
	leases := cs.CoordinationV1().Leases(ns)
	roles := map[string]string{"s/x": "member", "job": "member", "s/y": "partition", "job2": "partition"}
	for key, role := range roles {
		now := metav1.NewMicroTime(time.Now())
		l := &coordv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: kube.LeaseName(key), Labels: map[string]string{kube.LabelRole: role}},
			Spec: coordv1.LeaseSpec{HolderIdentity: ptr.To("ghost#00000009"), LeaseDurationSeconds: ptr.To[int32](1),
				AcquireTime: &now, RenewTime: &now},
		}
		if _, err := leases.Create(ctx(t), l, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(3 * time.Second) // past the hand-written Lease's one second and the drift allowance
	rs, err := c.ListForeign(ctx(t), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if _, err := c.RemoveForeign(ctx(t), r); err != nil {
			t.Fatalf("RemoveForeign(%+v) = %v", r, err)
		}
	}
	for key, role := range roles {
		if _, err := c.Acquire(ctx(t), key, "alice#00000001", 10*time.Second); err != nil {
			t.Errorf("Acquire(%s) of a Lease labelled %s = %v (ErrInvalidKey %v), after RemoveForeign of all ListForeign(\"\") listed: %+v",
				key, role, err, errors.Is(err, tenure.ErrInvalidKey), rs)
		}
	}
}
