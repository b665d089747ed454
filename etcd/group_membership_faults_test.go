package etcd_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/partition"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
)

// Adversarial tests of partition groups on etcd (group.go, partitions.go):
// every partition of a member rides the member's one lease.

// mustJoin makes id a member of group through c.
func mustJoin(t *testing.T, c partition.Coordinator, group, id string, ttl time.Duration) partition.Member {
	t.Helper()
	m, err := c.JoinGroup(ctx(t), group, id, ttl, 0)
	if err != nil {
		t.Fatalf("JoinGroup(%q, %q) = %v", group, id, err)
	}
	return m
}

// mustClaim claims names for m and fails the test unless each is granted.
func mustClaim(t *testing.T, c partition.Coordinator, m partition.Member, names ...string) []tenure.Grant {
	t.Helper()
	res, err := c.ClaimPartitions(ctx(t), m, names)
	if err != nil {
		t.Fatalf("ClaimPartitions(%s, %v) = %v", m, names, err)
	}
	gs := make([]tenure.Grant, len(res))
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("claim of %q for %s: %v", names[i], m, r.Err)
		}
		gs[i] = r.Grant
	}
	return gs
}

// partitionOwners counts the partitions of group that GroupPartitions
// lists, by holder.
func partitionOwners(t *testing.T, c partition.Coordinator, group string) map[string]int {
	t.Helper()
	gs, err := c.GroupPartitions(ctx(t), group)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, g := range gs {
		out[g.Holder]++
	}
	return out
}

// wantHeld fails the test unless claiming name for m is refused with a
// HeldError naming token.
func wantHeld(t *testing.T, c partition.Coordinator, m partition.Member, name string, token uint64) {
	t.Helper()
	res, err := c.ClaimPartitions(ctx(t), m, []string{name})
	var he *tenure.HeldError
	if err != nil || !errors.As(res[0].Err, &he) || he.Token != token {
		t.Errorf("claim of %q for %s = %v, %v; want HeldError with token %d", name, m, res, err, token)
	}
}

// TestMembershipRevokedByHand: an operator revokes a member's lease. Its
// renewal and its claims are lost, never revived, and another member claims
// its partitions with greater tokens.
func TestMembershipRevokedByHand(t *testing.T) {
	t.Parallel()
	eps := startEtcd(t)
	plain := newClient(t, eps)
	c := newCoordinator(t, plain)
	const group = "revoked-group"
	m := mustJoin(t, c, group, "n1", 3*time.Second)
	gs := mustClaim(t, c, m, "p0", "p1")
	if _, err := plain.Revoke(ctx(t), clientv3.LeaseID(m.Epoch)); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if r, err := c.RenewMember(ctx(t), m); !errors.Is(err, tenure.ErrLost) {
			t.Errorf("RenewMember(%s) after its lease was revoked = %v, %v; want ErrLost", m, r, err)
		}
		if res, err := c.ClaimPartitions(ctx(t), m, []string{"p0"}); !errors.Is(err, tenure.ErrLost) {
			t.Errorf("ClaimPartitions(%s) after its lease was revoked = %v, %v; want ErrLost", m, res, err)
		}
	}
	m2 := mustJoin(t, c, group, "n2", 3*time.Second)
	for i, g := range mustClaim(t, c, m2, "p0", "p1") {
		if g.Token <= gs[i].Token {
			t.Errorf("n2's claim of %s: token %d; want > %d, n1's", g.Key, g.Token, gs[i].Token)
		}
	}
}

// TestLostClaimReplyIsClaimedOnce: etcd applies a member's claim but the
// reply is lost; the member claims again a third of a TTL later. It gets
// the partition again with a new token that supersedes the grant etcd
// made (see partition.Coordinator), counted from its membership's lease
// (Sent is the membership's, not the claim's), and another member is
// refused with the new token.
func TestLostClaimReplyIsClaimedOnce(t *testing.T) {
	t.Parallel()
	eps := startEtcd(t)
	leases := newLeaseLog()
	var drop atomic.Bool
	c := newCoordinator(t, hookedClient(t, eps, leases.hooks(), loseNextReply(rpcTxn, &drop)))
	const group = "lostclaim-group"
	m := mustJoin(t, c, group, "n1", 3*time.Second)
	drop.Store(true)
	if res, err := c.ClaimPartitions(ctx(t), m, []string{"p0"}); err == nil {
		t.Fatalf("ClaimPartitions with its reply lost = %v; want an error of unknown outcome", res)
	}
	time.Sleep(time.Second)
	table, err := c.GroupPartitions(ctx(t), group)
	if err != nil || len(table) != 1 {
		t.Fatalf("GroupPartitions() = %v, %v; want the claim etcd applied", table, err)
	}
	g := mustClaim(t, c, m, "p0")[0]
	if g.Token <= table[0].Token {
		t.Errorf("claim after a lost reply: token %d; want more than %d, the grant etcd made", g.Token, table[0].Token)
	}
	checkGrantLease(t, leases, g)
	wantHeld(t, c, mustJoin(t, c, group, "n2", 3*time.Second), "p0", g.Token)
}

// TestRejoinedMemberDoesNotInheritPartitions: a member joins again under
// the same ID (a restart) while its earlier membership still lives. The new
// membership is refused the earlier one's partitions (they ride a lease the
// new one never renews), cannot release them, and claims them with new
// tokens once the earlier membership leaves.
func TestRejoinedMemberDoesNotInheritPartitions(t *testing.T) {
	t.Parallel()
	eps := startEtcd(t)
	leases := newLeaseLog()
	c := newCoordinator(t, hookedClient(t, eps, leases.hooks()))
	const group = "rejoin-group"
	old := mustJoin(t, c, group, "n1", 3*time.Second)
	g := mustClaim(t, c, old, "p0")[0]
	again := mustJoin(t, c, group, "n1", 3*time.Second)
	if again.Epoch == old.Epoch {
		t.Fatalf("JoinGroup again gave epoch %d again", again.Epoch)
	}
	wantHeld(t, c, again, "p0", g.Token)
	if err := c.ReleasePartitions(ctx(t), again, []tenure.Grant{g}); err != nil {
		t.Fatal(err)
	}
	if table, err := c.GroupPartitions(ctx(t), group); err != nil || len(table) != 1 || table[0].Token != g.Token {
		t.Errorf("GroupPartitions() after the new membership released the old one's grant = %v, %v; want %v kept", table, err, g)
	}
	if err := c.LeaveGroup(ctx(t), old); err != nil {
		t.Fatal(err)
	}
	ng := mustClaim(t, c, again, "p0")[0]
	if ng.Token <= g.Token {
		t.Errorf("claim after the old membership left: token %d; want > %d", ng.Token, g.Token)
	}
	checkGrantLease(t, leases, ng)
}
