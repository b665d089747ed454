package kube_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/kube"
)

// The tests of this file edit a Lease by hand between the write that
// granted it and its holder's first renewal (a key's) or check (a
// partition's). tenure's granting write carries the grant's token in the
// tenure.dev/token annotation, bound to the holder and acquireTime, so a
// write tenure did not make changes the token only when it changes one of
// those three.

// TestLabelEditBeforeFirstRenewal: a label edited by hand on a Lease
// between the write that granted it and its holder's first renewal (a
// key's) or check (a partition's) changes nothing its holder sees: the
// holder renews the grant, and the member still owns its partition, with
// the token granted.
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

// TestAnnotationEditBeforeFirstRenewal: an annotation that is not
// tenure's, added by hand before the first renewal or check, changes
// nothing either; nor does a second such edit, before a grant taken over
// a Lease that existed (an update, not a create).
func TestAnnotationEditBeforeFirstRenewal(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	ns := newNamespace(t, cs)
	c := newCoordinator(t, cs, ns)
	note := func(v string) func(*coordv1.Lease) {
		return func(l *coordv1.Lease) {
			if l.Annotations == nil {
				l.Annotations = map[string]string{}
			}
			l.Annotations["example.com/note"] = v
		}
	}
	g, err := c.Acquire(ctx(t), "job", "alice#00000001", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	editLease(t, cs, ns, kube.LeaseName(g.Key), note("created"))
	if r, err := c.Renew(ctx(t), g); err != nil || r.Token != g.Token {
		t.Errorf("Renew(%s) after an annotation edit = %v, %v; want renewed with token %d", g.Key, r, err, g.Token)
	}
	if err := c.Release(ctx(t), g); err != nil {
		t.Fatal(err)
	}
	g2, err := c.Acquire(ctx(t), "job", "bob#00000002", 30*time.Second)
	if err != nil || g2.Token <= g.Token {
		t.Fatalf("Acquire(job) after the release = %v, %v; want a token greater than %d", g2, err, g.Token)
	}
	editLease(t, cs, ns, kube.LeaseName(g2.Key), note("taken"))
	editLease(t, cs, ns, kube.LeaseName(g2.Key), func(l *coordv1.Lease) { l.Labels["team"] = "b" })
	if r, err := c.Renew(ctx(t), g2); err != nil || r.Token != g2.Token {
		t.Errorf("Renew(%s) after two edits = %v, %v; want renewed with token %d", g2.Key, r, err, g2.Token)
	}

	m := join(t, c, "m#00000003", 30*time.Second)
	p := claimOne(t, c, m, "0")
	editLease(t, cs, ns, kube.LeaseName(p.Key), note("claimed"))
	if lost, err := c.CheckPartitions(ctx(t), m, []tenure.Grant{p}); err != nil || len(lost) != 0 {
		t.Errorf("CheckPartitions(g/0) after an annotation edit = %v, %v; want still owned with token %d", lost, err, p.Token)
	}
}

// TestGroupLabelEditBeforeFirstCheck: a partition whose group and role
// labels are edited by hand before its member's first check drops out of
// its group's list, yet another member's claim (on a coordinator of its
// own) is refused it, naming its owner and token, and its member still
// owns it with the token granted; the check labels it again.
func TestGroupLabelEditBeforeFirstCheck(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	ns := newNamespace(t, cs)
	c, other := newCoordinator(t, cs, ns), newCoordinator(t, cs, ns)
	m := join(t, c, "m#00000001", 30*time.Second)
	p := claimOne(t, c, m, "0")
	name := kube.LeaseName(p.Key)
	editLease(t, cs, ns, name, func(l *coordv1.Lease) {
		l.Labels[kube.LabelGroup], l.Labels[kube.LabelRole] = hash16("another group"), "member"
	})
	m2 := join(t, other, "m#00000002", 30*time.Second)
	res, err := other.ClaimPartitions(ctx(t), m2, []string{"0"})
	var he *tenure.HeldError
	if err != nil || !errors.As(res[0].Err, &he) || he.Holder != m.ID || he.Token != p.Token {
		t.Fatalf("ClaimPartitions(%s, g/0) over a live owner whose partition's labels were edited = %+v, %v; want a *tenure.HeldError naming %s, token %d", m2.ID, res, err, m.ID, p.Token)
	}
	if lost, err := c.CheckPartitions(ctx(t), m, []tenure.Grant{p}); err != nil || len(lost) != 0 {
		t.Fatalf("CheckPartitions(g/0) after a group label edit = %v, %v; want still owned with token %d", lost, err, p.Token)
	}
	l, err := cs.CoordinationV1().Leases(ns).Get(ctx(t), name, metav1.GetOptions{})
	if err != nil || l.Labels[kube.LabelGroup] != hash16("g") || l.Labels[kube.LabelRole] != "partition" {
		t.Fatalf("labels after the check = %v, %v; want the group's, role partition", l.Labels, err)
	}
}

// TestEditThatMattersBeforeFirstRenewal: an edit by hand, before the first
// renewal or check, of what names the grant (the holder, or the
// tenure.dev/token annotation changed or removed) ends it: the holder is
// told it lost, and no other tenure holder is granted the key while the
// edited Lease is live (never two holders).
func TestEditThatMattersBeforeFirstRenewal(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	ns := newNamespace(t, cs)
	c, other := newCoordinator(t, cs, ns), newCoordinator(t, cs, ns)
	edits := map[string]func(*coordv1.Lease){
		"holder": func(l *coordv1.Lease) { mallory := "mallory#00000009"; l.Spec.HolderIdentity = &mallory },
		"token": func(l *coordv1.Lease) {
			parts := strings.SplitN(l.Annotations[kube.AnnotationToken], ",", 2)
			tok, err := strconv.ParseUint(parts[0], 10, 64)
			if err != nil || len(parts) != 2 {
				t.Fatalf("annotation %s = %q; want token,acquireTime,holder", kube.AnnotationToken, l.Annotations[kube.AnnotationToken])
			}
			l.Annotations[kube.AnnotationToken] = strconv.FormatUint(tok-1, 10) + "," + parts[1] // still bound to holder and acquireTime
		},
		"token removed": func(l *coordv1.Lease) { delete(l.Annotations, kube.AnnotationToken) },
	}
	for what, edit := range edits {
		key := "job-" + strings.ReplaceAll(what, " ", "-")
		g, err := c.Acquire(ctx(t), key, "alice#00000001", 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		editLease(t, cs, ns, kube.LeaseName(key), edit)
		if r, err := c.Renew(ctx(t), g); !errors.Is(err, tenure.ErrLost) {
			t.Errorf("%s edited: Renew(%v) = %v, %v; want an error wrapping tenure.ErrLost", what, g, r, err)
		}
		if g2, err := other.Acquire(ctx(t), key, "bob#00000002", 30*time.Second); !errors.Is(err, tenure.ErrHeld) {
			t.Errorf("%s edited: Acquire by bob = %v, %v; want an error wrapping tenure.ErrHeld while the edited Lease is live", what, g2, err)
		}
	}

	m := join(t, c, "m#00000003", 30*time.Second)
	for what, edit := range edits {
		name := strings.ReplaceAll(what, " ", "-")
		p := claimOne(t, c, m, name)
		editLease(t, cs, ns, kube.LeaseName(p.Key), edit)
		if lost, err := c.CheckPartitions(ctx(t), m, []tenure.Grant{p}); err != nil || len(lost) != 1 || lost[0] != p {
			t.Errorf("%s edited: CheckPartitions(%s) = %v, %v; want it lost", what, p.Key, lost, err)
		}
	}
}
