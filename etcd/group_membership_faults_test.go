package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/termcheck"
	"github.com/tenure-dev/tenure/partition"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
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

// TestRunnersUnderMembershipTampering runs three members of an 8-partition
// group while an adversary, every 200ms for 15s, tampers with their
// membership records by hand: it deletes a member's mark, writes it again
// unchanged, deletes it and puts it back, points it at another ID, writes
// a member's key again unchanged, or puts a membership of a phantom ID on
// a lease of its own that nothing renews; last, it deletes the mark of a
// member that runs partitions. Ownership of a partition is its key on its
// owner's lease, which the adversary never touches, so no partition may
// have two owners acting at once and no token may run twice (termcheck
// judges every act). Once the adversary stops, the foreign records it left
// are removed, and the three members share the partitions again. Those
// records include the partition keys of a member whose membership the
// adversary broke (see TestMembershipWithoutItsMark), which that member
// runs until its next renewal tells it so: they are removed only once its
// terms have ended, a TTL after the adversary's last write, as an operator
// waits before `release --force` of a live member's partition.
func TestRunnersUnderMembershipTampering(t *testing.T) {
	t.Parallel()
	eps := startEtcd(t)
	plain := newClient(t, eps)
	l := termcheck.New()
	fn := func(who string) partition.Func {
		return func(ctx context.Context, pt partition.Partition, term *tenure.Term) error {
			defer l.Run(pt.Key, who, term)()
			for ctx.Err() == nil {
				l.Act(pt.Key, who, term)
				time.Sleep(5 * time.Millisecond)
			}
			return nil
		}
	}
	run, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, who := range []string{"a", "b", "c"} {
		cfg := partition.DefaultConfig()
		cfg.Key, cfg.Partitions, cfg.Holder, cfg.Instance = "jobs", 8, who, "1"
		cfg.TTL, cfg.Margin = 2*time.Second, 200*time.Millisecond
		g, err := partition.New(newCoordinator(t, newClient(t, eps)), cfg)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { _ = g.Run(run, fn(who)) })
	}
	c := newCoordinator(t, plain)
	shared := func() bool {
		o := partitionOwners(t, c, "jobs")
		return o["a#1"] > 0 && o["b#1"] > 0 && o["c#1"] > 0 && o["a#1"]+o["b#1"]+o["c#1"] == 8
	}
	waitFor(t, 60*time.Second, "a, b and c to share the 8 partitions", shared)
	var acts [6]int
	var longest time.Duration // the longest TTL of a membership tampered with
	for i, end := 0, time.Now().Add(15*time.Second); time.Now().Before(end); i++ {
		time.Sleep(200 * time.Millisecond)
		ms, err := c.GroupMembers(ctx(t), "jobs")
		if err != nil || len(ms) == 0 {
			continue
		}
		m := ms[rand.IntN(len(ms))]
		longest = max(longest, m.TTL)
		key, mark := memberEtcdKeys(c, m)
		on := clientv3.WithLease(clientv3.LeaseID(m.Epoch))
		var ops [][]clientv3.Op
		k := rand.IntN(len(acts))
		acts[k]++
		switch k {
		case 0:
			ops = [][]clientv3.Op{{clientv3.OpDelete(mark)}}
		case 1:
			ops = [][]clientv3.Op{{clientv3.OpPut(mark, m.ID, on)}}
		case 2:
			ops = [][]clientv3.Op{{clientv3.OpDelete(mark)}, {clientv3.OpPut(mark, m.ID, on)}}
		case 3:
			ops = [][]clientv3.Op{{clientv3.OpPut(mark, fmt.Sprintf("phantom#%d", i), on)}}
		case 4:
			got, err := plain.Get(ctx(t), key)
			if err != nil || len(got.Kvs) == 0 {
				continue
			}
			ops = [][]clientv3.Op{{clientv3.OpPut(key, string(got.Kvs[0].Value), on)}}
		case 5:
			lease, err := plain.Grant(ctx(t), 2)
			if err != nil {
				t.Fatal(err)
			}
			pm := c.EtcdKey(fmt.Sprintf("#members/jobs#%016x", uint64(lease.ID)))
			id := fmt.Sprintf("phantom#%d", i)
			ops = [][]clientv3.Op{{clientv3.OpPut(pm+"#"+id, "2 8", clientv3.WithLease(lease.ID)), clientv3.OpPut(pm, id, clientv3.WithLease(lease.ID))}}
		}
		for _, o := range ops {
			// The member may have left, and revoked the lease it was
			// listed with, since GroupMembers: nothing to tamper with.
			if _, err := plain.Txn(ctx(t)).Then(o...).Commit(); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) && !errors.Is(err, rpctypes.ErrGRPCLeaseNotFound) {
				t.Fatal(err)
			}
		}
	}
	// Last, the mark of a member that runs partitions is deleted: it is no
	// member, and its partitions are foreign records, while it runs them.
	waitFor(t, 60*time.Second, "the mark of a member that runs partitions to be deleted", func() bool {
		ms, err := c.GroupMembers(ctx(t), "jobs")
		if err != nil {
			return false
		}
		o := partitionOwners(t, c, "jobs")
		for _, m := range ms {
			if o[m.ID] == 0 {
				continue
			}
			_, mark := memberEtcdKeys(c, m)
			if _, err := plain.Delete(ctx(t), mark); err != nil {
				t.Fatal(err)
			}
			acts[0]++
			longest = max(longest, m.TTL)
			return true
		}
		return false
	})
	// The adversary stops. A member whose membership it broke runs its
	// partitions until its next renewal says so, and at the latest until
	// its local deadline, which comes before the send of its last renewal
	// that found the membership whole (before the adversary's last write)
	// plus its TTL: wait that long, then remove what the adversary left,
	// until the members share the partitions again.
	time.Sleep(longest)
	waitFor(t, 60*time.Second, "a, b and c to share the 8 partitions once the foreign records are removed", func() bool {
		rs, err := c.ListForeign(ctx(t), "jobs")
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if _, err := c.RemoveForeign(ctx(t), r); err != nil {
				t.Fatal(err)
			}
		}
		return len(rs) == 0 && shared()
	})
	stop()
	wg.Wait()
	l.Verify(t)
	t.Logf("%d terms over 8 partitions, %d acts; tampering by kind (mark deleted, rewritten, put back, pointed elsewhere, key rewritten, phantom on its own lease): %v", l.Terms(""), l.Acts(), acts)
	if l.Terms("") <= 8 {
		t.Errorf("only %d terms: the tampering moved no partition, the test tested little", l.Terms(""))
	}
}
