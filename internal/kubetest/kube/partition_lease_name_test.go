package kube_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenure-dev/tenure/partition"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/kube"
)

// TestSingleKeyNamedAsPartitionLease: a single key spelled as the Lease
// name a partition's key hashes to ("jobs-0-" and 16 hex digits, itself a
// valid Lease name, so its own) maps to the partition's Lease. Whichever
// takes the Lease first, the other is refused, and the first keeps it: a
// single-key Acquire of a live partition's Lease name fails and the
// member still owns its partition; a claim of a partition whose Lease a
// single grant holds fails and the single grant still renews. The
// partition's Lease is older than its duration when the Acquire comes (its
// member renews its membership's Lease only).
func TestSingleKeyNamedAsPartitionLease(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	ns := newNamespace(t, cs)
	member, single := newCoordinator(t, cs, ns), newCoordinator(t, cs, ns)
	const group = "jobs"
	m, err := member.JoinGroup(ctx(t), group, "m#1", 2*time.Second, 2)
	if err != nil {
		t.Fatal(err)
	}
	res, err := member.ClaimPartitions(ctx(t), m, []string{"0"})
	if err != nil || res[0].Err != nil {
		t.Fatalf("ClaimPartitions(0) = %+v, %v; want a grant", res, err)
	}
	owned := res[0].Grant
	lookalike := kube.LeaseName(owned.Key)
	// The member renews its membership, never the partition's Lease: a
	// single-key Acquire would take that Lease as expired once it has seen
	// it unchanged for its duration, were it not refused as the group's.
	for round := range 2 {
		if g, err := single.Acquire(ctx(t), lookalike, "intruder#1", time.Second); err == nil {
			t.Errorf("round %d: Acquire(%q), the Lease name of live partition %q = %s; want it refused", round, lookalike, owned.Key, g)
		}
		for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
			if m, err = member.RenewMember(ctx(t), m); err != nil {
				t.Fatal(err)
			}
		}
	}
	if lost, err := member.CheckPartitions(ctx(t), m, []tenure.Grant{owned}); err != nil || len(lost) != 0 {
		t.Errorf("CheckPartitions() after an Acquire of its Lease name = %v, %v; want partition %q still owned", lost, err, owned.Key)
	}

	// The other way: the single key first. It is refused even while the
	// Lease does not exist (a key spelled as a hashed name is no key on
	// Kubernetes), so it never stands in the partition's way.
	key1 := partition.Key(group, "1")
	if g, err := single.Acquire(ctx(t), kube.LeaseName(key1), "single#1", 30*time.Second); !errors.Is(err, tenure.ErrInvalidKey) {
		t.Errorf("Acquire(%q), the Lease name of partition %q = %s, %v; want tenure.ErrInvalidKey", kube.LeaseName(key1), key1, g, err)
	}
	res, err = member.ClaimPartitions(ctx(t), m, []string{"1"})
	if err != nil || res[0].Err != nil {
		t.Errorf("ClaimPartitions(1) after an Acquire of its Lease name = %+v, %v; want a grant", res, err)
	}
}

// TestLookalikeKeysRefused: on Kubernetes a key spelled as a hashed Lease
// name (the name of partition "jobs/1"'s Lease, or a name of 16 hex digits
// alone) is refused by Acquire, Leader and Watch with tenure.ErrInvalidKey
// and no Lease is made; a key that merely ends in hex digits is not.
func TestLookalikeKeysRefused(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	ns := newNamespace(t, cs)
	c := newCoordinator(t, cs, ns)
	for _, key := range []string{kube.LeaseName(partition.Key("jobs", "1")), kube.LeaseName("Jobs"), "0123456789abcdef"} {
		if g, err := c.Acquire(ctx(t), key, "single#1", 30*time.Second); !errors.Is(err, tenure.ErrInvalidKey) {
			t.Errorf("Acquire(%q) = %s, %v; want tenure.ErrInvalidKey", key, g, err)
		}
		if _, _, err := c.Leader(ctx(t), key); !errors.Is(err, tenure.ErrInvalidKey) {
			t.Errorf("Leader(%q) error = %v; want tenure.ErrInvalidKey", key, err)
		}
		if _, err := c.Watch(ctx(t), key); !errors.Is(err, tenure.ErrInvalidKey) {
			t.Errorf("Watch(%q) error = %v; want tenure.ErrInvalidKey", key, err)
		}
	}
	if ls, err := cs.CoordinationV1().Leases(ns).List(ctx(t), metav1.ListOptions{}); err != nil || len(ls.Items) != 0 {
		t.Errorf("Leases after refused Acquires = %v, %v; want none", ls, err)
	}
	for _, key := range []string{"build-0123456789abcde", "build.0123456789abcdef", "build-0123456789abcdeg", "build0123456789abcdef"} {
		g, err := c.Acquire(ctx(t), key, "single#1", 30*time.Second)
		if err != nil {
			t.Errorf("Acquire(%q), not a hashed name = %v; want a grant", key, err)
			continue
		}
		if err := c.Release(ctx(t), g); err != nil {
			t.Error(err)
		}
	}
}

// TestPartitionAfterForeignLookalike: a Lease at partition "jobs/1"'s name
// that another writer made without tenure's key annotation (client-go's
// leaderelection on that name, say) is refused to the partition
// (ErrNameClash), listed by ListForeign under its name as foreign, and
// freed by RemoveForeign; the claim that follows is granted, with a token
// above the Lease's resourceVersion.
func TestPartitionAfterForeignLookalike(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	ns := newNamespace(t, cs)
	member := newCoordinator(t, cs, ns)
	key := partition.Key("jobs", "1")
	name := kube.LeaseName(key)
	holder, secs := "client-go-1", int32(1)
	l, err := cs.CoordinationV1().Leases(ns).Create(ctx(t), &coordv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       coordv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := member.JoinGroup(ctx(t), "jobs", "m#1", 30*time.Second, 2)
	if err != nil {
		t.Fatal(err)
	}
	res, err := member.ClaimPartitions(ctx(t), m, []string{"1"})
	if err != nil || !errors.Is(res[0].Err, kube.ErrNameClash) {
		t.Fatalf("ClaimPartitions(1) over a Lease of its name without annotation = %+v, %v; want kube.ErrNameClash", res, err)
	}
	rs, err := member.ListForeign(ctx(t), "jobs-")
	if err != nil || len(rs) != 1 || rs[0].Key != name || rs[0].Holder != holder {
		t.Fatalf("ListForeign(jobs-) = %+v, %v; want the Lease %s held by %s", rs, err, name, holder)
	}
	if ok, err := member.RemoveForeign(ctx(t), rs[0]); !ok || err != nil {
		t.Fatalf("RemoveForeign(%+v) = %v, %v; want true", rs[0], ok, err)
	}
	res, err = member.ClaimPartitions(ctx(t), m, []string{"1"})
	if err != nil || res[0].Err != nil {
		t.Fatalf("ClaimPartitions(1) after the Lease was removed = %+v, %v; want a grant", res, err)
	}
	rv, _ := strconv.ParseUint(l.ResourceVersion, 10, 64)
	if res[0].Grant.Token <= rv {
		t.Errorf("ClaimPartitions(1) token = %d; want > %d, the removed Lease's resourceVersion", res[0].Grant.Token, rv)
	}
}
