package kube_test

import (
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/kube"
)

// TestRemoveForeignOfLiveRecords: RemoveForeign judges the Lease as it
// reads it, never by the record it is given ("a record naming a live grant
// or member, however it was made, removes nothing"). Records made up by a
// caller, each naming a live grant, membership or partition by its
// current resourceVersion (every field as ListForeign would fill it), are
// refused by a coordinator that has never seen those Leases, and nothing
// is deleted: a removal would free the key at once while its holder leads.
func TestRemoveForeignOfLiveRecords(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	ns := newNamespace(t, cs)
	leases := cs.CoordinationV1().Leases(ns)
	owner := newCoordinator(t, cs, ns)
	const ttl = 30 * time.Second
	g, err := owner.Acquire(ctx(t), "crafted/key", "h#1", ttl)
	if err != nil {
		t.Fatal(err)
	}
	m, err := owner.JoinGroup(ctx(t), "crafted", "m#1", ttl, 1)
	if err != nil {
		t.Fatal(err)
	}
	p := claimOne(t, owner, m, "0")
	rv := func(name string) uint64 {
		t.Helper()
		l, err := leases.Get(ctx(t), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.ParseUint(l.ResourceVersion, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	names := map[string]string{} // record's Key/Member → Lease name
	var records []tenure.ForeignRecord
	for _, r := range []struct {
		rec  tenure.ForeignRecord
		name string
	}{
		{tenure.ForeignRecord{Key: g.Key, Holder: g.Holder, Malformed: true, Reason: "no holder, without tenure's release mark"}, kube.LeaseName(g.Key)},
		{tenure.ForeignRecord{Key: g.Key, Holder: g.Holder, TTL: -1, Reason: "a leaseDurationSeconds of 999999, longer than tenure grants"}, kube.LeaseName(g.Key)},
		{tenure.ForeignRecord{Key: p.Key, Holder: p.Holder, Reason: "owned by a membership Lease that no member wrote as it stands"}, kube.LeaseName(p.Key)},
		{tenure.ForeignRecord{Key: p.Key, Holder: p.Holder, TTL: -1, Reason: "group has no live member"}, kube.LeaseName(p.Key)},
		{tenure.ForeignRecord{Key: m.Group, Member: m.ID, Holder: m.ID, Reason: "a membership Lease that no member wrote as it stands"}, memberLeaseName(m)},
	} {
		r.rec.Token = rv(r.name)
		names[r.rec.Key+"|"+r.rec.Member] = r.name
		records = append(records, r.rec)
	}
	remover := newCoordinator(t, cs, ns) // has never seen the Leases
	for _, r := range records {
		if ok, err := remover.RemoveForeign(ctx(t), r); ok || err != nil {
			t.Errorf("RemoveForeign(%+v), a record made up for a live Lease = %v, %v; want false, nil", r, ok, err)
		}
		if _, err := leases.Get(ctx(t), names[r.Key+"|"+r.Member], metav1.GetOptions{}); err != nil {
			t.Fatalf("Lease %s after RemoveForeign(%+v): %v; want it untouched", names[r.Key+"|"+r.Member], r, err)
		}
	}
	if _, err := owner.Renew(ctx(t), g); err != nil {
		t.Errorf("Renew(%v) after the made-up removals = %v; want renewed", g, err)
	}
	if _, err := owner.RenewMember(ctx(t), m); err != nil {
		t.Errorf("RenewMember(%s) after the made-up removals = %v; want renewed", m, err)
	}
	if lost, err := owner.CheckPartitions(ctx(t), m, []tenure.Grant{p}); err != nil || len(lost) != 0 {
		t.Errorf("CheckPartitions(%s, %v) after the made-up removals = lost %v, %v; want still owned", m, p, lost, err)
	}
}
