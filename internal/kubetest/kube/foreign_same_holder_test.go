package kube_test

import (
	"errors"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/kube"
)

// TestAcquireBySameHolderOfForeignLease: Acquire naming the holder a
// foreign Lease names (held for longer than a day) does not take it over,
// and ListForeign still lists it; RemoveForeign of it read before a write
// by hand removes nothing.
func TestAcquireBySameHolderOfForeignLease(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	ns := newNamespace(t, cs)
	c := newCoordinator(t, cs, ns)
	key, holder, secs := "s/long", "mallory", int32(200000)
	now := metav1.NewMicroTime(time.Now())
	l := &coordv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: kube.LeaseName(key), Annotations: map[string]string{kube.AnnotationKey: key}},
		Spec:       coordv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now},
	}
	if _, err := cs.CoordinationV1().Leases(ns).Create(ctx(t), l, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rs, err := c.ListForeign(ctx(t), "s/")
	if err != nil || len(rs) != 1 || rs[0].Key != key {
		t.Fatalf("ListForeign(s/) = %+v, %v; want %s", rs, err, key)
	}
	if g, err := c.Acquire(ctx(t), key, holder, 5*time.Second); !errors.Is(err, tenure.ErrHeld) {
		t.Errorf("Acquire(%s, %s) = %v, %v; want ErrHeld: the Lease is foreign", key, holder, g, err)
	}
	if rs2, err := c.ListForeign(ctx(t), "s/"); err != nil || len(rs2) != 1 {
		t.Errorf("ListForeign(s/) after Acquire = %+v, %v; want %s still", rs2, err, key)
	}
	cur, err := cs.CoordinationV1().Leases(ns).Get(ctx(t), kube.LeaseName(key), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	if _, err := cs.CoordinationV1().Leases(ns).Update(ctx(t), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.RemoveForeign(ctx(t), rs[0]); ok || err != nil {
		t.Errorf("RemoveForeign(%+v) after a write = %v, %v; want false, nil", rs[0], ok, err)
	}
}
