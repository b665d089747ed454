package kube_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
)

// TestTakeoverEndsMembership: a member whose membership expired on a
// claimer's clock loses it for good when the claimer takes its partition:
// the claimer deletes the membership Lease (preconditioned on the version
// that expired) before it writes the partition, so the member cannot renew
// it afterwards, not even through a coordinator that never saw it expire
// (a restarted process), and so never believes it still owns what was
// taken.
func TestTakeoverEndsMembership(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	ns := newNamespace(t, cs)
	a, b := newCoordinator(t, cs, ns), newCoordinator(t, cs, ns)
	const ttl = 2 * time.Second
	ma, err := a.JoinGroup(ctx(t), "grp", "a#1", ttl, 0)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := b.JoinGroup(ctx(t), "grp", "b#1", time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.ClaimPartitions(ctx(t), ma, []string{"0"})
	if err != nil || res[0].Err != nil {
		t.Fatalf("a's claim = %v, %v", res, err)
	}
	ga := res[0].Grant
	if ms, err := b.GroupMembers(ctx(t), "grp"); err != nil || len(ms) != 2 {
		t.Fatalf("GroupMembers() = %v, %v; want a and b", ms, err)
	}
	time.Sleep(ttl + ttl/100 + 100*time.Millisecond) // a never renews
	res, err = b.ClaimPartitions(ctx(t), mb, []string{"0"})
	if err != nil || res[0].Err != nil || res[0].Grant.Token <= ga.Token {
		t.Fatalf("b's claim of expired a's partition = %v, %v; want a grant with token > %d", res, err, ga.Token)
	}
	restarted := newCoordinator(t, cs, ns)
	if m, err := restarted.RenewMember(ctx(t), ma); !errors.Is(err, tenure.ErrLost) {
		t.Fatalf("RenewMember(a) through a coordinator that never saw it expire = %v, %v; want tenure.ErrLost: its membership must be over once b took its partition", m, err)
	}
	if lost, err := restarted.CheckPartitions(ctx(t), ma, []tenure.Grant{ga}); !errors.Is(err, tenure.ErrLost) {
		t.Fatalf("CheckPartitions(a) = %v, %v; want tenure.ErrLost", lost, err)
	}
}
