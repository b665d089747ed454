//go:build openfinding

package kube_test

import (
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/kube"
)

// TestLabelEditBeforeFirstRenewal: a label edited by hand on a Lease
// between the write that granted it and its holder's first renewal (a
// key's) or check (a partition's) changes nothing its holder sees: the
// holder renews the grant, and the member still owns its partition, with
// the token granted. Today the token of a Lease without a bound
// tenure.dev/token annotation is its resourceVersion, so the edit's write
// reads as a new grant, and the holder is told it lost.
func TestLabelEditBeforeFirstRenewal(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	ns := newNamespace(t, cs)
	c := newCoordinator(t, cs, ns)
	g, err := c.Acquire(ctx(t), "job", "alice#00000001", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	editLease(t, cs, ns, kube.LeaseName(g.Key), func(l *coordv1.Lease) { l.Labels["team"] = "a" })
	if r, err := c.Renew(ctx(t), g); err != nil || r.Token != g.Token {
		t.Errorf("Renew(%s) after a label edit = %v, %v; want renewed with token %d", g.Key, r, err, g.Token)
	}
	m, err := c.JoinGroup(ctx(t), "g", "m#00000002", 30*time.Second, 2)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.ClaimPartitions(ctx(t), m, []string{"0"})
	if err != nil || res[0].Err != nil {
		t.Fatalf("ClaimPartitions(g/0) = %+v, %v", res, err)
	}
	editLease(t, cs, ns, kube.LeaseName(res[0].Grant.Key), func(l *coordv1.Lease) { l.Labels["team"] = "a" })
	if lost, err := c.CheckPartitions(ctx(t), m, []tenure.Grant{res[0].Grant}); err != nil || len(lost) != 0 {
		t.Errorf("CheckPartitions(g/0) after a label edit = %v, %v; want still owned with token %d", lost, err, res[0].Grant.Token)
	}
}
