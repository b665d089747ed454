package kube_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/partition"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/kube"
	"github.com/tenure-dev/tenure/partition/partitiontest"
)

// TestGroupConformance runs the partition group suite on a real API
// server, each member with a coordinator of its own, as separate processes
// would have. A partition is freed by hand as an operator would with
// kubectl: an update that clears its Lease's holder; a membership is moved
// to another group by an edit of its Lease's group label and annotation,
// and its member is told (its renewal is lost); a partition is given to
// another group's member by an edit of its Lease's holder and member
// annotation; the labels of a membership's and a partition's Leases are
// edited, which tenure never reads. The memberships last
// 10s: the suite claims 200 partitions without renewing, a write each on
// Kubernetes, which took over 4s on a loaded machine (load average 20 on 2
// cores).
func TestGroupConformance(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	ns := newNamespace(t, cs)
	partitiontest.Run(t, func(t *testing.T) partition.Coordinator {
		c, err := kube.New(cs, ns)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}, partitiontest.WithTTL(10*time.Second), partitiontest.WithFreeByHand(func(t *testing.T, group, name string) {
		leases := cs.CoordinationV1().Leases(ns)
		l, err := leases.Get(ctx(t), kube.LeaseName(partition.Key(group, name)), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		none := ""
		l.Spec.HolderIdentity = &none
		if _, err := leases.Update(ctx(t), l, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("free partition %s/%s by hand: %v", group, name, err)
		}
	}), partitiontest.WithMovedMembership(func(t *testing.T, m partition.Member, to string) {
		l := membershipLease(t, cs, ns, m)
		l.Labels[kube.LabelGroup] = hash16(to) // to's, as tenure writes it
		l.Annotations[kube.AnnotationGroup] = to
		if _, err := cs.CoordinationV1().Leases(ns).Update(ctx(t), l, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("move membership %s to %q by hand: %v", m, to, err)
		}
	}, false), partitiontest.WithOwnerByHand(func(t *testing.T, group, name string, owner partition.Member) {
		leases := cs.CoordinationV1().Leases(ns)
		l, err := leases.Get(ctx(t), kube.LeaseName(partition.Key(group, name)), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		l.Spec.HolderIdentity = &owner.ID
		l.Annotations[kube.AnnotationMember] = membershipLease(t, cs, ns, owner).Name
		if _, err := leases.Update(ctx(t), l, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("give partition %s/%s to %s by hand: %v", group, name, owner, err)
		}
	}), partitiontest.WithIgnoredEdit(func(t *testing.T, m partition.Member, owned tenure.Grant) {
		editLease(t, cs, ns, memberLeaseName(m), func(l *coordv1.Lease) {
			l.Labels[kube.LabelRole], l.Labels[kube.LabelGroup] = "partition", hash16("another group")
		})
		editLease(t, cs, ns, kube.LeaseName(owned.Key), func(l *coordv1.Lease) { l.Labels[kube.LabelRole] = "member" })
	}))
}

// membershipLease returns m's membership Lease, found as an operator would
// with kubectl: among the membership Leases, the one of m's group whose
// name ends in m's epoch.
func membershipLease(t *testing.T, cs kubernetes.Interface, ns string, m partition.Member) *coordv1.Lease {
	t.Helper()
	list, err := cs.CoordinationV1().Leases(ns).List(ctx(t), metav1.ListOptions{LabelSelector: kube.LabelRole + "=member"})
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range list.Items {
		if l.Annotations[kube.AnnotationGroup] == m.Group && strings.HasSuffix(l.Name, fmt.Sprintf("-%016x", m.Epoch)) {
			return &list.Items[i]
		}
	}
	t.Fatalf("no membership Lease of %s among %d", m, len(list.Items))
	return nil
}

// TestSingleKeyOnGroupLease: one owner per key across the two APIs. An
// Acquire (tenure.Elector, `tenure run --key`) of a key that names a
// partition of a group is refused with an error wrapping
// tenure.ErrInvalidKey that names the key and the group (a membership
// Lease's name, spelled as a hashed Lease name, with one naming the key),
// from a coordinator that has never seen the Lease and after the wait
// that would let it take an expired one; and a partition whose key a
// single grant holds live is not claimed over it.
func TestSingleKeyOnGroupLease(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	ns := newNamespace(t, cs)
	member, single := newCoordinator(t, cs, ns), newCoordinator(t, cs, ns)
	const group = "jobs"
	m, err := member.JoinGroup(ctx(t), group, "m#1", 2*time.Second, 4)
	if err != nil {
		t.Fatal(err)
	}
	res, err := member.ClaimPartitions(ctx(t), m, []string{"p0"})
	if err != nil || res[0].Err != nil {
		t.Fatalf("ClaimPartitions(p0) = %v, %v", res, err)
	}
	key := partition.Key(group, "p0")
	for round := range 2 {
		_, err := single.Acquire(ctx(t), key, "intruder#1", time.Second)
		if !errors.Is(err, tenure.ErrInvalidKey) || !strings.Contains(err.Error(), `"jobs/p0"`) || !strings.Contains(err.Error(), `group "jobs"`) {
			t.Fatalf("round %d: Acquire(%q) error = %v; want one wrapping tenure.ErrInvalidKey naming the key and the group", round, key, err)
		}
		time.Sleep(2100 * time.Millisecond) // the Lease's duration and more, unrenewed
	}
	list, err := cs.CoordinationV1().Leases(ns).List(ctx(t), metav1.ListOptions{LabelSelector: kube.LabelRole + "=member"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list membership Leases = %d, %v; want 1", len(list.Items), err)
	}
	membership := list.Items[0].Name
	// A membership Lease's name is spelled as a hashed name: refused as such
	// a key, before any read.
	if _, err := single.Acquire(ctx(t), membership, "intruder#1", time.Second); !errors.Is(err, tenure.ErrInvalidKey) || !strings.Contains(err.Error(), membership) {
		t.Fatalf("Acquire(%q), a membership Lease: error = %v; want one wrapping tenure.ErrInvalidKey naming it", membership, err)
	}

	// The other way: a single grant holds the key first; a member that
	// joins later does not claim that partition over it.
	key1 := partition.Key(group, "p1")
	g, err := single.Acquire(ctx(t), key1, "single#1", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := member.JoinGroup(ctx(t), group, "m#2", 30*time.Second, 4)
	if err != nil {
		t.Fatal(err)
	}
	res, err = member.ClaimPartitions(ctx(t), m2, []string{"p1"})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res[0].Err, tenure.ErrHeld) {
		t.Fatalf("ClaimPartitions(p1) while %v holds its key = %+v; want an error wrapping tenure.ErrHeld", g, res[0])
	}
}
