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

// TestKeyLeaseWithMemberLabel: a key's Lease written by hand with the
// membership role label but none of a membership's annotations (and so of
// no group) makes Acquire of the key fail; ListForeign lists a record for
// it, and RemoveForeign of that record lets Acquire take the key.
func TestKeyLeaseWithMemberLabel(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	ns := newNamespace(t, cs)
	c := newCoordinator(t, cs, ns)
	leases := cs.CoordinationV1().Leases(ns)
	for _, key := range []string{"s/x", "job"} {
		now := metav1.NewMicroTime(time.Now())
		l := &coordv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: kube.LeaseName(key), Labels: map[string]string{kube.LabelRole: "member"}},
			Spec: coordv1.LeaseSpec{HolderIdentity: ptr.To("ghost#00000009"), LeaseDurationSeconds: ptr.To[int32](1),
				AcquireTime: &now, RenewTime: &now},
		}
		if _, err := leases.Create(ctx(t), l, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(3 * time.Second) // past the hand-written Lease's one second and the drift allowance
	for _, key := range []string{"s/x", "job"} {
		_, err := c.Acquire(ctx(t), key, "alice#00000001", 10*time.Second)
		if err == nil {
			continue
		}
		rs, lerr := c.ListForeign(ctx(t), "")
		if lerr != nil {
			t.Fatal(lerr)
		}
		if len(rs) == 0 {
			t.Errorf("Acquire(%s) = %v (ErrInvalidKey %v), but ListForeign(\"\") = []", key, err, errors.Is(err, tenure.ErrInvalidKey))
		}
	}
}
