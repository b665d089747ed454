package kube_test

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/kube"
)

// TestForeignMembershipNamingALiveMember: a membership Lease of group g
// written by hand that names live member a ("a#1": its ID, under another
// epoch), held for two days, owns partition g/1 (its Lease written by hand
// too), while a owns g/0. ListForeign lists g/1 and that membership, never
// a's g/0 or a's own membership; RemoveForeign of each record deletes the
// planted membership alone: a renews and keeps g/0 (CheckPartitions
// reports nothing lost, b's claim of it is refused), and b then takes g/1
// with a token above the planted Lease's resourceVersion.
func TestForeignMembershipNamingALiveMember(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	ns := newNamespace(t, cs)
	c := newCoordinator(t, cs, ns)
	leases := cs.CoordinationV1().Leases(ns)
	a, b := join(t, c, "a#1", 10*time.Second), join(t, c, "b#1", 10*time.Second)
	g0 := claimOne(t, c, a, "0")

	ghost := fmt.Sprintf("tm-%s-%016x", hash16("g"), uint64(7))
	holder, days, secs, now := "a#1", int32(2*86400), int32(10), metav1.NewMicroTime(time.Now())
	m, err := leases.Create(ctx(t), &coordv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: ghost, Annotations: map[string]string{kube.AnnotationGroup: "g", kube.AnnotationPartitions: "2"}},
		Spec:       coordv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &days, AcquireTime: &now, RenewTime: &now},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := leases.Create(ctx(t), &coordv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: kube.LeaseName("g/1"), Annotations: map[string]string{kube.AnnotationKey: "g/1", kube.AnnotationMember: ghost}},
		Spec:       coordv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mrv, _ := strconv.ParseUint(m.ResourceVersion, 10, 64)
	prv, _ := strconv.ParseUint(p.ResourceVersion, 10, 64)

	rs := listForeign(t, c, "")
	var part, member bool
	for _, r := range rs {
		switch {
		case r.Key == "g/1" && r.Member == "" && r.Token == prv:
			part = true
		case r.Key == "g" && r.Member == "a#1" && r.Token == mrv:
			member = true
		default:
			t.Errorf("ListForeign() lists %+v; want only g/1 and the planted membership (a, live, owns g/0 at token %d)", r, g0.Token)
		}
	}
	if !part || !member {
		t.Errorf("ListForeign() = %+v; want g/1 at token %d and the membership at %d", rs, prv, mrv)
	}
	for _, r := range rs {
		if _, err := c.RemoveForeign(ctx(t), r); err != nil {
			t.Errorf("RemoveForeign(%+v) = %v", r, err)
		}
	}
	a = renewMember(t, c, a)
	if lost, err := c.CheckPartitions(ctx(t), a, []tenure.Grant{g0}); err != nil || len(lost) != 0 {
		t.Errorf("CheckPartitions(a, g/0) = lost %v, %v; want nothing lost", lost, err)
	}
	res, err := c.ClaimPartitions(ctx(t), b, []string{"0", "1"})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res[0].Err, tenure.ErrHeld) {
		t.Errorf("claim of g/0 by b = %+v; want it refused naming a", res[0])
	}
	if res[1].Err != nil || res[1].Grant.Token <= prv {
		t.Errorf("claim of g/1 by b = %+v; want a grant above the planted Lease's resourceVersion %d", res[1], prv)
	}
	if left := listForeign(t, c, ""); len(left) != 0 {
		t.Errorf("ListForeign() after RemoveForeign = %+v; want none", left)
	}
}
