package kube_test

import (
	"errors"
	"testing"
	"time"

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
	_, cs := server(t)
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

	// The other way: the single key first.
	key1 := partition.Key(group, "1")
	g, err := single.Acquire(ctx(t), kube.LeaseName(key1), "single#1", 30*time.Second)
	if err != nil {
		t.Fatalf("Acquire(%q), a free key = %v; want a grant", kube.LeaseName(key1), err)
	}
	res, err = member.ClaimPartitions(ctx(t), m, []string{"1"})
	if err == nil && res[0].Err == nil {
		t.Errorf("ClaimPartitions(1) while %s holds its Lease = %s; want it refused", g, res[0].Grant)
	}
	if _, err := single.Renew(ctx(t), g); err != nil {
		t.Errorf("Renew(%s) after a claim of the partition named like it = %v; want it renewed", g, err)
	}
	if err == nil && res[0].Err != nil && !errors.Is(res[0].Err, kube.ErrNameClash) && !errors.Is(res[0].Err, tenure.ErrHeld) {
		t.Errorf("ClaimPartitions(1) error = %v; want one wrapping kube.ErrNameClash or tenure.ErrHeld", res[0].Err)
	}
}
