//go:build adversary

package etcd_test

import (
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
)

// TestAdversary3LateClaimStrandsPartition (liveness, not safety): member a
// claims partition 0 and its reply is lost; a claims it again (the
// doubtful partition) and runs it with that grant, T2; the first claim,
// forwarded late (by another etcd member, over another connection of a's
// client), is applied after it: a claim of a partition a owns writes it
// again, T3. etcd's CheckPartitions judges by the lease, so a's runner
// never learns that T2 was superseded; when the partition is handed to b,
// a releases T2, which frees nothing (the token differs), and b's claims
// are refused for as long as a lives. Two clients of one etcd stand for
// the two routes. Before claims of an owned partition wrote it again, the
// late claim read the key and wrote nothing, and the release freed it.
func TestAdversary3LateClaimStrandsPartition(t *testing.T) {
	eps := startEtcd(t)
	c := newCoordinator(t, newClient(t, eps))
	late := newCoordinator(t, newClient(t, eps)) // the late route
	a := mustJoin(t, c, "jobs", "a", time.Minute)
	b := mustJoin(t, c, "jobs", "b", time.Minute)
	mustClaim(t, late, a, "0")          // applied; its reply was lost: 0 is doubtful
	t2 := mustClaim(t, c, a, "0")[0]    // claimed again: a runs 0 with T2
	t3 := mustClaim(t, late, a, "0")[0] // stands for the first claim, applied late
	if lost, err := c.CheckPartitions(ctx(t), a, []tenure.Grant{t2}); err != nil || len(lost) != 0 {
		t.Fatalf("CheckPartitions(T2) = %v, %v; want nothing lost (etcd judges by the lease)", lost, err)
	}
	if err := c.ReleasePartitions(ctx(t), a, []tenure.Grant{t2}); err != nil { // handed over to b
		t.Fatal(err)
	}
	res, err := c.ClaimPartitions(ctx(t), b, []string{"0"})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Err != nil {
		t.Errorf("b's claim of 0 after a released the grant it ran (T2 = %d; the late claim wrote T3 = %d, which a never saw) = %v; want a grant: the partition stays a's, run by nobody, while a lives", t2.Token, t3.Token, res[0].Err)
	}
}
