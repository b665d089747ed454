package kube_test

import (
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/kube"
)

// TestForeignMembershipLeases: a membership Lease that no member wrote as
// it stands (one made to last two days, owning no partition) is listed by
// ListForeign as a record of its group's key naming its member, under the
// group's prefix only, never a live member's; RemoveForeign deletes it only
// at the resourceVersion it was read at, and the member stays.
func TestForeignMembershipLeases(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	ns := newNamespace(t, cs)
	c := newCoordinator(t, cs, ns)
	leases := cs.CoordinationV1().Leases(ns)
	if _, err := c.JoinGroup(ctx(t), "g", "w1", 10*time.Second, 2); err != nil {
		t.Fatal(err)
	}
	m, err := c.JoinGroup(ctx(t), "g", "mallory#00000000", 10*time.Second, 2)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := leases.List(ctx(t), metav1.ListOptions{LabelSelector: kube.LabelRole + "=member"})
	if err != nil {
		t.Fatal(err)
	}
	var token uint64
	for _, l := range ls.Items {
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != m.ID {
			continue
		}
		*l.Spec.LeaseDurationSeconds = 2 * 86400
		u, err := leases.Update(ctx(t), &l, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if token, err = strconv.ParseUint(u.ResourceVersion, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	list := func(prefix string) []tenure.ForeignRecord {
		t.Helper()
		rs, err := c.ListForeign(ctx(t), prefix)
		if err != nil {
			t.Fatalf("ListForeign(%q) error = %v", prefix, err)
		}
		return rs
	}
	rs := list("g")
	if len(rs) != 1 || rs[0].Key != "g" || rs[0].Member != m.ID || rs[0].Token != token || rs[0].Malformed || rs[0].Reason == "" {
		t.Fatalf("ListForeign(g) = %+v; want %s's membership of g with token %d", rs, m.ID, token)
	}
	if other := list("h"); len(other) != 0 {
		t.Errorf("ListForeign(h) = %+v; want none", other)
	}
	stale := rs[0]
	stale.Token--
	if ok, err := c.RemoveForeign(ctx(t), stale); ok || err != nil {
		t.Errorf("RemoveForeign at another resourceVersion = %v, %v; want false, nil", ok, err)
	}
	if ok, err := c.RemoveForeign(ctx(t), rs[0]); !ok || err != nil {
		t.Fatalf("RemoveForeign(%+v) = %v, %v; want true, nil", rs[0], ok, err)
	}
	if left := list(""); len(left) != 0 {
		t.Errorf("ListForeign(\"\") after RemoveForeign = %+v; want none", left)
	}
	if ms, err := c.GroupMembers(ctx(t), "g"); err != nil || len(ms) != 1 || ms[0].ID != "w1" {
		t.Errorf("GroupMembers(g) = %+v, %v; want w1", ms, err)
	}
}
