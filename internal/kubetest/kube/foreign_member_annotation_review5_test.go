package kube_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/kube"
)

// TestKeyLeaseWithAStrayMemberAnnotation: the Lease of key solo/x, a
// single key no group runs, carries a tenure.dev/member annotation that no
// member of group solo wrote: one naming a membership of another group
// (which owns nothing, see kube/roles.go), or one naming a membership of
// solo that does not exist. Its holder's lease is a second long, so it
// ends at once. Acquire of solo/x is refused while the Lease stands.
// Either that refusal ends (the key is granted), or the Lease is a record
// ListForeign names under solo/x, RemoveForeign frees, and the next
// Acquire is granted with a token above the Lease's resourceVersion.
func TestKeyLeaseWithAStrayMemberAnnotation(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	for _, tc := range []struct{ name, member string }{
		{"another group's membership", fmt.Sprintf("tm-%s-%016x", hash16("other"), 1)},
		{"a membership of solo that never existed", fmt.Sprintf("tm-%s-%016x", hash16("solo"), 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t, cs)
			c := newCoordinator(t, cs, ns)
			holder, secs, now := "mallory#1", int32(1), metav1.NewMicroTime(time.Now())
			l, err := cs.CoordinationV1().Leases(ns).Create(ctx(t), &coordv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: kube.LeaseName("solo/x"),
					Annotations: map[string]string{kube.AnnotationKey: "solo/x", kube.AnnotationMember: tc.member}},
				Spec: coordv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(1100 * time.Millisecond) // the holder's lease (1s) has ended on any clock
			deadline := time.Now().Add(3 * time.Second)
			var aerr error
			for time.Now().Before(deadline) {
				g, err := c.Acquire(ctx(t), "solo/x", "h1#1", 5*time.Second)
				if err == nil {
					t.Logf("Acquire(solo/x) = %v", g)
					return // granted once the holder's lease ended: fine
				}
				aerr = err
				time.Sleep(200 * time.Millisecond)
			}
			t.Logf("Acquire(solo/x) beside the Lease = %v", aerr)
			var rec *tenure.ForeignRecord
			rs := listForeign(t, c, "")
			for i := range rs {
				if rs[i].Key == "solo/x" && rs[i].Member == "" {
					rec = &rs[i]
				}
			}
			if rec == nil {
				t.Fatalf("Acquire(solo/x) is refused (%v) and ListForeign(\"\") = %+v names no record of solo/x: status shows nothing that holds it, and release --force cannot free it", aerr, rs)
			}
			if ok, err := c.RemoveForeign(ctx(t), *rec); !ok || err != nil {
				t.Fatalf("RemoveForeign(%+v) = %v, %v; want true, nil", *rec, ok, err)
			}
			g, err := c.Acquire(ctx(t), "solo/x", "h1#1", 5*time.Second)
			if err != nil {
				t.Fatalf("Acquire(solo/x) after RemoveForeign = %v, %v; want a grant", g, err)
			}
			if rv, _ := strconv.ParseUint(l.ResourceVersion, 10, 64); g.Token <= rv {
				t.Errorf("Acquire(solo/x) after RemoveForeign = token %d; want above the Lease's resourceVersion %d", g.Token, rv)
			}
		})
	}
}
