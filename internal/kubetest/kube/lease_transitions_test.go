package kube_test

import (
	"math"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/kube"
	"github.com/tenure-dev/tenure/partition"
)

// TestLeaseTransitionsAtMaximum: a Lease whose leaseTransitions is the
// largest int32 (written by another program or by hand) is still granted
// once its holder's lease runs out, to a key's contender and to a
// partition's claimer: one more transition would be negative, which the
// API server refuses (leaseTransitions must be >= 0), so the count starts
// again at 0. Before the fix every grant of such a Lease failed with 422
// Invalid, for ever: the key could never be led again.
func TestLeaseTransitionsAtMaximum(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	ns := newNamespace(t, cs)
	leases := cs.CoordinationV1().Leases(ns)
	c := newCoordinator(t, cs, ns)
	m, err := c.JoinGroup(ctx(t), "most", "m#1", 30*time.Second, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"most-transitions", partition.Key("most", "0")} {
		holder, secs, most := "someone", int32(1), int32(math.MaxInt32)
		now := metav1.NowMicro()
		l := &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: kube.LeaseName(key)},
			Spec: coordv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, LeaseTransitions: &most, AcquireTime: &now, RenewTime: &now}}
		if l.Name != key {
			l.Annotations = map[string]string{kube.AnnotationKey: key}
		}
		if _, err := leases.Create(ctx(t), l, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		grant := func() (tenure.Grant, error) {
			if key == "most-transitions" {
				return c.Acquire(ctx(t), key, "h#1", 30*time.Second)
			}
			res, err := c.ClaimPartitions(ctx(t), m, []string{"0"})
			if err != nil {
				return tenure.Grant{}, err
			}
			return res[0].Grant, res[0].Err
		}
		var g tenure.Grant
		for began := time.Now(); ; time.Sleep(200 * time.Millisecond) {
			if g, err = grant(); err == nil {
				break
			}
			if time.Since(began) > 5*time.Second {
				t.Fatalf("grant of %s, whose Lease has leaseTransitions %d and a 1s duration: still failing after 5s: %v; want granted once the duration ran out", key, most, err)
			}
		}
		got, err := leases.Get(ctx(t), l.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if tr := got.Spec.LeaseTransitions; tr == nil || *tr < 0 || *tr == most {
			t.Errorf("Lease of %s after %v: leaseTransitions %v; want changed, and not negative", key, g, tr)
		}
	}
}
