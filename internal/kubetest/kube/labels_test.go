package kube_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/partition"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/kube"
)

// The tests of this file edit tenure's labels (tenure.dev/role,
// tenure.dev/group) by hand, as anyone with kubectl may: a label is for
// people's selectors, and tenure decides what a Lease is by its name and
// annotations, so no label edit changes who owns a key, a partition or a
// membership.

// TestMembershipLeaseUnlabelledKeepsPartitions: a membership Lease whose
// role label someone removed is still renewed by its member, which owns
// the partition it claimed as CheckPartitions reads it; another member's
// claim is refused that partition while the membership lives, as a
// membership moved by hand is on PostgreSQL.
func TestMembershipLeaseUnlabelledKeepsPartitions(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	ns := newNamespace(t, cs)
	c := newCoordinator(t, cs, ns)
	leases := cs.CoordinationV1().Leases(ns)
	alice, err := c.JoinGroup(ctx(t), "g", "alice#00000001", 10*time.Second, 2)
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.JoinGroup(ctx(t), "g", "mallory#00000000", 10*time.Second, 2)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.ClaimPartitions(ctx(t), m, []string{"0"})
	if err != nil || res[0].Err != nil {
		t.Fatalf("ClaimPartitions(mallory, g/0) = %+v, %v", res, err)
	}
	held := res[0].Grant
	ls, err := leases.List(ctx(t), metav1.ListOptions{LabelSelector: kube.LabelRole + "=member"})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls.Items {
		if l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == m.ID {
			delete(l.Labels, kube.LabelRole)
			if _, err := leases.Update(ctx(t), &l, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if m, err = c.RenewMember(ctx(t), m); err != nil {
		t.Fatalf("RenewMember(mallory) after the label's removal = %v", err)
	}
	if lost, err := c.CheckPartitions(ctx(t), m, []tenure.Grant{held}); err != nil || len(lost) != 0 {
		t.Fatalf("CheckPartitions(mallory) = %v, %v; want g/0 still held", lost, err)
	}
	res, err = c.ClaimPartitions(ctx(t), alice, []string{"0"})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Err == nil {
		t.Errorf("ClaimPartitions(alice, g/0) = %+v while mallory, just renewed, holds it at token %d", res[0].Grant, held.Token)
	}
}

// TestKeyLeaseWithMemberLabel: a key's Lease written by hand with a group
// role label (member or partition) but none of the group's annotations,
// expired, does not keep Acquire from its key for ever: after RemoveForeign
// of every record ListForeign lists (a Lease at a hashed name without
// tenure.dev/key is one), Acquire takes each key.
func TestKeyLeaseWithMemberLabel(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	ns := newNamespace(t, cs)
	c := newCoordinator(t, cs, ns)
	leases := cs.CoordinationV1().Leases(ns)
	roles := map[string]string{"s/x": "member", "job": "member", "s/y": "partition", "job2": "partition"}
	for key, role := range roles {
		now := metav1.NewMicroTime(time.Now())
		l := &coordv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: kube.LeaseName(key), Labels: map[string]string{kube.LabelRole: role}},
			Spec: coordv1.LeaseSpec{HolderIdentity: ptr.To("ghost#00000009"), LeaseDurationSeconds: ptr.To[int32](1),
				AcquireTime: &now, RenewTime: &now},
		}
		if _, err := leases.Create(ctx(t), l, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.List(ctx(t), ""); err != nil { // c sees the Leases now: its wait counts from before the sleep
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // past the hand-written Lease's one second and the drift allowance
	rs, err := c.ListForeign(ctx(t), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if _, err := c.RemoveForeign(ctx(t), r); err != nil {
			t.Fatalf("RemoveForeign(%+v) = %v", r, err)
		}
	}
	for key, role := range roles {
		if _, err := c.Acquire(ctx(t), key, "alice#00000001", 10*time.Second); err != nil {
			t.Errorf("Acquire(%s) of a Lease labelled %s = %v (ErrInvalidKey %v), after RemoveForeign of all ListForeign(\"\") listed: %+v",
				key, role, err, errors.Is(err, tenure.ErrInvalidKey), rs)
		}
	}
}

// TestMembershipLabelsEdited: whatever is done by hand to the labels of a
// live membership Lease (its role set to partition and back, its group
// label removed or set to another group's, every label removed), its
// member renews it and keeps the partition it claimed, another member's
// claim of that partition is refused naming it, the group lists it and its
// partition, and ListForeign lists nothing of it.
func TestMembershipLabelsEdited(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	edits := []struct {
		name  string
		edits []func(labels map[string]string)
	}{
		{"role partition, then member again", []func(map[string]string){
			func(l map[string]string) { l[kube.LabelRole] = "partition" },
			func(l map[string]string) { l[kube.LabelRole] = "member" },
		}},
		{"group label removed", []func(map[string]string){func(l map[string]string) { delete(l, kube.LabelGroup) }}},
		{"group label another group's", []func(map[string]string){func(l map[string]string) { l[kube.LabelGroup] = hash16("h") }}},
		{"every label removed", []func(map[string]string){func(l map[string]string) { clear(l) }}},
	}
	for _, tc := range edits {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t, cs)
			a, b := newCoordinator(t, cs, ns), newCoordinator(t, cs, ns)
			alice := join(t, a, "alice#00000001", 30*time.Second)
			m := join(t, b, "mallory#00000000", 30*time.Second)
			held := claimOne(t, b, m, "0")
			for i, edit := range tc.edits {
				editLease(t, cs, ns, memberLeaseName(m), func(l *coordv1.Lease) {
					if l.Labels == nil {
						l.Labels = map[string]string{}
					}
					edit(l.Labels)
				})
				res, err := a.ClaimPartitions(ctx(t), alice, []string{"0"})
				var he *tenure.HeldError
				if err != nil || !errors.As(res[0].Err, &he) || he.Holder != m.ID {
					t.Fatalf("edit %d: ClaimPartitions(alice, g/0) = %+v, %v; want a *tenure.HeldError naming %s, who holds it at token %d", i, res, err, m.ID, held.Token)
				}
				if m, err = b.RenewMember(ctx(t), m); err != nil {
					t.Fatalf("edit %d: RenewMember(mallory) = %v; want renewed", i, err)
				}
				if l, err := cs.CoordinationV1().Leases(ns).Get(ctx(t), memberLeaseName(m), metav1.GetOptions{}); err != nil ||
					l.Labels[kube.LabelRole] != "member" || l.Labels[kube.LabelGroup] != hash16("g") {
					t.Errorf("edit %d: membership Lease after RenewMember: labels %v, %v; want tenure's written back", i, l.Labels, err)
				}
				if lost, err := b.CheckPartitions(ctx(t), m, []tenure.Grant{held}); err != nil || len(lost) != 0 {
					t.Fatalf("edit %d: CheckPartitions(mallory) = %v, %v; want g/0 still held", i, lost, err)
				}
				ms, err := a.GroupMembers(ctx(t), "g")
				if err != nil || len(ms) != 2 || ms[0].ID != alice.ID || ms[1].ID != m.ID {
					t.Errorf("edit %d: GroupMembers(g) = %+v, %v; want alice and mallory", i, ms, err)
				}
				gs, err := a.GroupPartitions(ctx(t), "g")
				if err != nil || len(gs) != 1 || gs[0].Holder != m.ID || gs[0].Token != held.Token {
					t.Errorf("edit %d: GroupPartitions(g) = %+v, %v; want g/0 of mallory at token %d", i, gs, err, held.Token)
				}
				if rs := listForeign(t, a, ""); len(rs) != 0 {
					t.Errorf("edit %d: ListForeign(\"\") = %+v; want none: a live member wrote everything", i, rs)
				}
			}
		})
	}
}

// TestPartitionLeaseLabelsEdited: whatever is done by hand to the labels of
// a live partition's Lease (every label removed, its role set to member,
// its group label set to another group's), a single-key Acquire of its key
// is refused as a partition's (tenure.ErrInvalidKey), also after the wait
// that lets Acquire take an expired Lease while its member renews its
// membership; the group lists the partition, another member's claim is
// refused, and its owner keeps it.
func TestPartitionLeaseLabelsEdited(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	edits := []struct {
		name string
		edit func(labels map[string]string)
	}{
		{"every label removed", func(l map[string]string) { clear(l) }},
		{"role member", func(l map[string]string) { l[kube.LabelRole] = "member" }},
		{"group label another group's", func(l map[string]string) { l[kube.LabelGroup] = hash16("h") }},
	}
	for _, tc := range edits {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t, cs)
			a, b, single := newCoordinator(t, cs, ns), newCoordinator(t, cs, ns), newCoordinator(t, cs, ns)
			m := join(t, a, "owner#00000001", 3*time.Second)
			o := join(t, b, "other#00000002", 30*time.Second)
			held := claimOne(t, a, m, "0")
			// A member checks its partitions at every renewal, which binds
			// the token to the Lease (an edit before that changes the
			// token read: see TestLabelEditBeforeFirstRenewal).
			if lost, err := a.CheckPartitions(ctx(t), m, []tenure.Grant{held}); err != nil || len(lost) != 0 {
				t.Fatalf("CheckPartitions(owner) = %v, %v", lost, err)
			}
			editLease(t, cs, ns, kube.LeaseName(held.Key), func(l *coordv1.Lease) { tc.edit(l.Labels) })
			start := time.Now()
			for round := 0; ; round++ {
				if _, err := single.Acquire(ctx(t), held.Key, "single#00000003", time.Second); !errors.Is(err, tenure.ErrInvalidKey) {
					t.Fatalf("round %d (%s after the edit): Acquire(%s) = %v; want an error wrapping tenure.ErrInvalidKey: owner's partition", round, time.Since(start), held.Key, err)
				}
				m = renewMember(t, a, m)
				if time.Since(start) > 4*time.Second { // past the partition Lease's 3s and the drift allowance
					break
				}
				time.Sleep(300 * time.Millisecond)
			}
			if lost, err := a.CheckPartitions(ctx(t), m, []tenure.Grant{held}); err != nil || len(lost) != 0 {
				t.Errorf("CheckPartitions(owner) = %v, %v; want g/0 still held", lost, err)
			}
			m = renewMember(t, a, m)
			var he *tenure.HeldError
			if res, err := b.ClaimPartitions(ctx(t), o, []string{"0"}); err != nil || !errors.As(res[0].Err, &he) || he.Holder != m.ID {
				t.Errorf("ClaimPartitions(other, g/0) = %+v, %v; want a *tenure.HeldError naming %s", res, err, m.ID)
			}
			if gs, err := b.GroupPartitions(ctx(t), "g"); err != nil || len(gs) != 1 || gs[0].Holder != m.ID || gs[0].Token != held.Token {
				t.Errorf("GroupPartitions(g) = %+v, %v; want g/0 of owner at token %d", gs, err, held.Token)
			}
		})
	}
}

// TestKeyLeaseWithGroupLabelsHeld: a live single-key grant whose Lease is
// given a group's labels by hand (role partition or member, and the
// group's label) stays its holder's: a member of the group is refused that
// partition and another holder that key, each with a *tenure.HeldError
// naming the holder (not tenure.ErrInvalidKey), and the holder renews it.
func TestKeyLeaseWithGroupLabelsHeld(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	for _, role := range []string{"partition", "member"} {
		t.Run(role, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t, cs)
			a, b := newCoordinator(t, cs, ns), newCoordinator(t, cs, ns)
			g, err := a.Acquire(ctx(t), "jobs/0", "single#00000001", 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			// A renewal binds the token to the Lease (an edit before it
			// changes the token read: see TestLabelEditBeforeFirstRenewal).
			if g, err = a.Renew(ctx(t), g); err != nil {
				t.Fatal(err)
			}
			editLease(t, cs, ns, kube.LeaseName(g.Key), func(l *coordv1.Lease) {
				l.Labels[kube.LabelRole], l.Labels[kube.LabelGroup] = role, hash16("jobs")
			})
			m, err := b.JoinGroup(ctx(t), "jobs", "member#00000002", 30*time.Second, 2)
			if err != nil {
				t.Fatal(err)
			}
			var he *tenure.HeldError
			if res, err := b.ClaimPartitions(ctx(t), m, []string{"0"}); err != nil || !errors.As(res[0].Err, &he) || he.Holder != g.Holder {
				t.Errorf("ClaimPartitions(jobs/0) of a key held live by %s = %+v, %v; want a *tenure.HeldError naming it", g.Holder, res, err)
			}
			if _, err := b.Acquire(ctx(t), g.Key, "other#00000003", 30*time.Second); !errors.As(err, &he) || he.Holder != g.Holder {
				t.Errorf("Acquire(jobs/0) by another holder = %v; want a *tenure.HeldError naming %s", err, g.Holder)
			}
			if _, err := a.Renew(ctx(t), g); err != nil {
				t.Errorf("Renew(jobs/0) by its holder = %v; want renewed", err)
			}
			if gs, err := b.GroupPartitions(ctx(t), "jobs"); err != nil || len(gs) != 0 {
				t.Errorf("GroupPartitions(jobs) = %+v, %v; want none: a single key's grant is no member's", gs, err)
			}
		})
	}
}

// TestMembershipAnnotationsRemoved: a live membership Lease whose
// annotations are removed by hand is no longer its member's (its renewal
// is lost), but the partition it owns is not taken while the Lease lives
// on a claimer's clock: the member, told at its next renewal, stops before
// the Lease expires. Once it has, another member takes the partition with
// a greater token.
func TestMembershipAnnotationsRemoved(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	ns := newNamespace(t, cs)
	a, b := newCoordinator(t, cs, ns), newCoordinator(t, cs, ns)
	m := join(t, a, "owner#00000001", 3*time.Second)
	held := claimOne(t, a, m, "0")
	o := join(t, b, "other#00000002", 30*time.Second)
	editLease(t, cs, ns, memberLeaseName(m), func(l *coordv1.Lease) { clear(l.Annotations) })
	if _, err := a.RenewMember(ctx(t), m); !errors.Is(err, tenure.ErrLost) {
		t.Errorf("RenewMember(owner) after its annotations were removed = %v; want tenure.ErrLost", err)
	}
	var he *tenure.HeldError
	if res, err := b.ClaimPartitions(ctx(t), o, []string{"0"}); err != nil || !errors.As(res[0].Err, &he) || he.Holder != m.ID {
		t.Fatalf("ClaimPartitions(other, g/0) while owner's membership Lease lives = %+v, %v; want a *tenure.HeldError naming %s", res, err, m.ID)
	}
	time.Sleep(3100 * time.Millisecond) // the membership's 3s and the drift allowance, unrenewed
	if res, err := b.ClaimPartitions(ctx(t), o, []string{"0"}); err != nil || res[0].Err != nil || res[0].Grant.Token <= held.Token {
		t.Errorf("ClaimPartitions(other, g/0) after owner's membership Lease expired = %+v, %v; want a grant with a token > %d", res, err, held.Token)
	}
}

// TestForeignLeaseWithGroupLabels: Leases that are not tenure's (another
// program's, at names of no group) given a group's labels and its group
// annotation by hand are no member's and no partition's: the group does
// not list them, a claim does not delete them though they expired, and
// Acquire takes their keys once they have expired.
func TestForeignLeaseWithGroupLabels(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	ns := newNamespace(t, cs)
	c := newCoordinator(t, cs, ns)
	leases := cs.CoordinationV1().Leases(ns)
	roles := map[string]string{"other-member": "member", "other-partition": "partition"}
	for name, role := range roles {
		now := metav1.NewMicroTime(time.Now())
		l := &coordv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{kube.LabelRole: role, kube.LabelGroup: hash16("g")},
				Annotations: map[string]string{kube.AnnotationGroup: "g", kube.AnnotationPartitions: "2"}},
			Spec: coordv1.LeaseSpec{HolderIdentity: ptr.To("node-a_5d2c"), LeaseDurationSeconds: ptr.To[int32](1), AcquireTime: &now, RenewTime: &now},
		}
		if _, err := leases.Create(ctx(t), l, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	m, err := c.JoinGroup(ctx(t), "g", "member#00000001", 30*time.Second, 2)
	if err != nil {
		t.Fatal(err)
	}
	if ms, err := c.GroupMembers(ctx(t), "g"); err != nil || len(ms) != 1 || ms[0].ID != m.ID {
		t.Errorf("GroupMembers(g) = %+v, %v; want %s alone", ms, err, m.ID)
	}
	if _, err := c.List(ctx(t), ""); err != nil { // c sees the Leases now: its wait counts from before the sleep
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // the foreign Leases' 1s and the drift allowance
	if res, err := c.ClaimPartitions(ctx(t), m, []string{"0"}); err != nil || res[0].Err != nil {
		t.Fatalf("ClaimPartitions(g/0) = %+v, %v", res, err)
	}
	for name, role := range roles {
		if _, err := leases.Get(ctx(t), name, metav1.GetOptions{}); err != nil {
			t.Errorf("Get(%s), labelled %s of g, after a claim in g = %v; want it kept: no membership of g's", name, role, err)
		}
		if _, err := c.Acquire(ctx(t), name, "alice#00000002", 10*time.Second); err != nil {
			t.Errorf("Acquire(%s), expired and labelled %s of g = %v; want a grant", name, role, err)
		}
	}
}

// editLease applies edit to Lease name of namespace ns and updates it, as
// an operator's kubectl edit would.
func editLease(t testing.TB, cs kubernetes.Interface, ns, name string, edit func(*coordv1.Lease)) {
	t.Helper()
	leases := cs.CoordinationV1().Leases(ns)
	l, err := leases.Get(ctx(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	edit(l)
	if _, err := leases.Update(ctx(t), l, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("edit Lease %s: %v", name, err)
	}
}

// memberLeaseName is the name of m's membership Lease, as tenure names it:
// "tm-", 16 hex digits of the SHA-256 of the group, and the epoch.
func memberLeaseName(m partition.Member) string {
	return fmt.Sprintf("tm-%s-%016x", hash16(m.Group), m.Epoch)
}

// hash16 is the tenure.dev/group label value of group: 16 hex digits of
// its SHA-256.
func hash16(group string) string {
	sum := sha256.Sum256([]byte(group))
	return hex.EncodeToString(sum[:])[:16]
}

// renewMember renews m on c.
func renewMember(t *testing.T, c *kube.Coordinator, m partition.Member) partition.Member {
	t.Helper()
	r, err := c.RenewMember(ctx(t), m)
	if err != nil {
		t.Fatalf("RenewMember(%s) = %v", m, err)
	}
	return r
}

// listForeign returns c.ListForeign(prefix).
func listForeign(t *testing.T, c *kube.Coordinator, prefix string) []tenure.ForeignRecord {
	t.Helper()
	rs, err := c.ListForeign(ctx(t), prefix)
	if err != nil {
		t.Fatalf("ListForeign(%q) = %v", prefix, err)
	}
	return rs
}

// join makes id a member of group g on c, with a membership of ttl.
func join(t *testing.T, c *kube.Coordinator, id string, ttl time.Duration) partition.Member {
	t.Helper()
	m, err := c.JoinGroup(ctx(t), "g", id, ttl, 2)
	if err != nil {
		t.Fatalf("JoinGroup(g, %s) = %v", id, err)
	}
	return m
}

// claimOne claims partition name of group g for m on c, and fails the test
// unless it is granted.
func claimOne(t *testing.T, c *kube.Coordinator, m partition.Member, name string) tenure.Grant {
	t.Helper()
	res, err := c.ClaimPartitions(ctx(t), m, []string{name})
	if err != nil || res[0].Err != nil {
		t.Fatalf("ClaimPartitions(%s, g/%s) = %+v, %v", m.ID, name, res, err)
	}
	return res[0].Grant
}
