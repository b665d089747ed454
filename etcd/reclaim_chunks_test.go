package etcd_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/etcd"

	"github.com/tenure-dev/tenure"
)

// TestReclaimAcrossChunkBoundary claims, at and around the 125
// partitions a transaction takes, a mix of partitions member a owns
// (each a nested transaction's failure branch that writes the key again),
// partitions a second process of a's identity owns (same value, another
// lease: the nested comparison must refuse them) and free ones. It tries
// to make a chunk exceed etcd's --max-txn-ops (the claim would fail) or a
// re-claim take the other process's key, hand out a token not greater than
// the one superseded, or leave a late release of a superseded grant able
// to free what a claimed again. It passed when written: kept as a
// regression test.
func TestReclaimAcrossChunkBoundary(t *testing.T) {
	t.Parallel()
	eps := startEtcd(t)
	for _, n := range []int{125, 126, 251} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			c := newCoordinator(t, newClient(t, eps), etcd.WithPrefix("/chunks-"+strconv.Itoa(n)+"/"))
			other := newCoordinator(t, newClient(t, eps), etcd.WithPrefix("/chunks-"+strconv.Itoa(n)+"/"))
			a := mustJoin(t, c, "jobs", "a", time.Minute)
			twin := mustJoin(t, other, "jobs", "a", time.Minute) // same identity, another process
			names := make([]string, n)
			var mine, twins []string
			for i := range names {
				names[i] = strconv.Itoa(i)
				switch i % 3 {
				case 0:
					twins = append(twins, names[i])
				case 1:
					mine = append(mine, names[i])
				} // 2: free
			}
			old := map[string]tenure.Grant{}
			for i, g := range mustClaim(t, c, a, mine...) {
				old[mine[i]] = g
			}
			twinGrants := map[string]tenure.Grant{}
			for i, g := range mustClaim(t, other, twin, twins...) {
				twinGrants[twins[i]] = g
			}
			res, err := c.ClaimPartitions(ctx(t), a, names)
			if err != nil {
				t.Fatalf("ClaimPartitions(%d names) = %v", n, err)
			}
			var fresh []tenure.Grant
			for i, r := range res {
				name := names[i]
				if tg, ok := twinGrants[name]; ok {
					var he *tenure.HeldError
					if !errors.As(r.Err, &he) || he.Token != tg.Token {
						t.Errorf("claim of %s, owned by a's twin (token %d) = %+v, %v; want a HeldError naming its token", name, tg.Token, r.Grant, r.Err)
					}
					continue
				}
				if r.Err != nil {
					t.Errorf("claim of %s = %v; want a grant", name, r.Err)
					continue
				}
				if og, ok := old[name]; ok && r.Grant.Token <= og.Token {
					t.Errorf("re-claim of %s: token %d, not greater than the superseded %d", name, r.Grant.Token, og.Token)
				}
				fresh = append(fresh, r.Grant)
			}
			var superseded []tenure.Grant
			for _, g := range old {
				superseded = append(superseded, g)
			}
			if err := c.ReleasePartitions(ctx(t), a, superseded); err != nil {
				t.Fatalf("late ReleasePartitions(superseded) = %v", err)
			}
			if lost, err := c.CheckPartitions(ctx(t), a, fresh); err != nil || len(lost) != 0 {
				t.Errorf("CheckPartitions(fresh grants) after a late release = %d lost, %v; want none", len(lost), err)
			}
			if lost, err := other.CheckPartitions(ctx(t), twin, mapValues(twinGrants)); err != nil || len(lost) != 0 {
				t.Errorf("twin's CheckPartitions = %d lost, %v; want none", len(lost), err)
			}
			all, err := c.GroupPartitions(ctx(t), "jobs")
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != n {
				t.Errorf("GroupPartitions lists %d live partitions; want %d", len(all), n)
			}
			b := mustJoin(t, other, "jobs", "b", time.Minute)
			res, err = other.ClaimPartitions(ctx(t), b, names)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range res {
				if r.Err == nil {
					t.Errorf("b's claim of %s after a late release of a's superseded grant: granted %+v; want it held", names[i], r.Grant)
				}
			}
		})
	}
}

func mapValues(m map[string]tenure.Grant) []tenure.Grant {
	out := make([]tenure.Grant, 0, len(m))
	for _, g := range m {
		out = append(out, g)
	}
	return out
}
