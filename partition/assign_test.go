package partition_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/tenure-dev/tenure/partition"
)

func members(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("node-%d#%08x", i, uint32(i*2654435761))
	}
	return out
}

// randomMembers returns n member IDs with random instances.
func randomMembers(rng *rand.Rand, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("node-%d#%08x", rng.IntN(1000), rng.Uint32())
	}
	return out
}

func loads(a map[string]string) map[string]int {
	out := map[string]int{}
	for _, m := range a {
		out[m]++
	}
	return out
}

func moved(a, b map[string]string) int {
	n := 0
	for k, v := range a {
		if b[k] != v {
			n++
		}
	}
	return n
}

// checkBalanced fails unless a assigns all p partitions to ms with every
// member owning ⌊P/N⌋ or ⌈P/N⌉.
func checkBalanced(t *testing.T, what string, a map[string]string, p int, ms []string) {
	t.Helper()
	if len(a) != p {
		t.Fatalf("%s: %d partitions assigned; want %d", what, len(a), p)
	}
	l := loads(a)
	for _, m := range ms {
		if l[m] < p/len(ms) || l[m] > (p+len(ms)-1)/len(ms) {
			t.Errorf("%s: member %s owns %d partitions; want ⌊P/N⌋ = %d to ⌈P/N⌉ = %d", what, m, l[m], p/len(ms), (p+len(ms)-1)/len(ms))
		}
	}
}

func TestAssignBalance(t *testing.T) {
	for _, tc := range []struct{ p, n int }{{1, 1}, {1, 3}, {7, 3}, {64, 5}, {100, 10}, {1000, 7}, {10000, 10}} {
		t.Run(fmt.Sprintf("P=%d,N=%d", tc.p, tc.n), func(t *testing.T) {
			ms := members(tc.n)
			checkBalanced(t, "Rebalance(nil owners)", partition.Rebalance(partition.Names(tc.p), ms, nil), tc.p, ms)
		})
	}
}

func TestAssignDeterministic(t *testing.T) {
	names, ms := partition.Names(500), members(6)
	want := partition.Rebalance(names, ms, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5 {
		shuffled := append([]string(nil), ms...)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if got := partition.Rebalance(names, shuffled, nil); !maps.Equal(got, want) {
			t.Fatalf("Rebalance(members in order %v) differs from Rebalance(members in order %v) on %d partitions", shuffled, ms, moved(got, want))
		}
		// Owners that are not members are ignored; a settled map is kept.
		owners := maps.Clone(want)
		owners["0"] = "gone#1"
		if got := partition.Rebalance(names, shuffled, owners); !maps.Equal(got, want) {
			t.Fatalf("Rebalance(settled, members in order %v) moved %d partitions; want 0", shuffled, moved(want, got))
		}
	}
}

// TestRebalanceMovesLittle is a property test over many P and N: from a
// settled assignment, a join moves at most 1.1·P/N partitions and a leave
// only about the leaver's (both at most 1.1·P/N, +1 for rounding where P/N
// is small), in one round
// (the result is settled: a fixed point), balanced within ⌊P/N⌋..⌈P/N⌉.
func TestRebalanceMovesLittle(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	sizes := []int{2, 7, 16, 30, 64, 100, 100, 101, 333, 1000, 4096}
	for i := range 300 {
		p := sizes[i%len(sizes)]
		if i == 0 {
			p = 10000
		}
		n := 1 + rng.IntN(min(p, 16))
		names, ms := partition.Names(p), randomMembers(rng, n+1)
		before := partition.Rebalance(names, ms[:n], nil)
		after := partition.Rebalance(names, ms, before)
		checkBalanced(t, fmt.Sprintf("P=%d, N=%d+1", p, n), after, p, ms)
		if again := partition.Rebalance(names, ms, after); !maps.Equal(again, after) {
			t.Fatalf("P=%d, N=%d: Rebalance of a settled assignment moved %d partitions; want 0", p, n+1, moved(after, again))
		}
		// +1: the newcomer may be one of the P mod N members whose quota is
		// ⌈P/N⌉; that matters only where P/N is small.
		if got, limit := moved(before, after), 1.1*float64(p)/float64(n)+1; float64(got) > limit {
			t.Errorf("P=%d, N=%d: a join moved %d partitions; want ≤ 1.1·P/N + 1 = %.1f", p, n, got, limit)
		}
		if got, limit := moved(before, after), 1.1*float64(p)/float64(n); p >= 10*n && float64(got) > limit {
			t.Errorf("P=%d, N=%d: a join moved %d partitions; want ≤ 1.1·P/N = %.1f", p, n, got, limit)
		}
		k := rng.IntN(n + 1)
		without := append(append([]string(nil), ms[:k]...), ms[k+1:]...)
		left := partition.Rebalance(names, without, after)
		if n > 0 {
			checkBalanced(t, fmt.Sprintf("P=%d, N=%d−1", p, n+1), left, p, without)
		}
		got, limit := moved(after, left), 1.1*float64(p)/float64(n+1)+1
		if float64(got) > limit {
			t.Errorf("P=%d, N=%d: the leave of %s moved %d partitions; want ≤ 1.1·P/N + 1 = %.1f", p, n+1, ms[k], got, limit)
		}
		if own := loads(after)[ms[k]]; p >= (n+1)*n && got != own {
			t.Errorf("P=%d, N=%d: the leave of %s moved %d partitions; want only its own %d", p, n+1, ms[k], got, own)
		}
	}
}

// TestRebalanceAgreesDuringHandOver checks that members reading the table
// at any moment of a hand-over compute the same target: with any subset of
// the moves done (a moved partition still with its old owner, free, or
// claimed by its new one), Rebalance gives the target again.
func TestRebalanceAgreesDuringHandOver(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 100 {
		p := []int{16, 100, 1000}[i%3]
		n := 2 + rng.IntN(10)
		names, ms := partition.Names(p), randomMembers(rng, n+1)
		before := partition.Rebalance(names, ms[:n], nil)
		change := ms
		if i%2 == 1 { // a leave instead of a join
			before, change = partition.Rebalance(names, ms, nil), ms[1:]
		}
		target := partition.Rebalance(names, change, before)
		for range 5 {
			mid := maps.Clone(before)
			for name, owner := range target {
				if before[name] == owner {
					continue
				}
				switch rng.IntN(3) {
				case 0: // not yet released
				case 1:
					delete(mid, name)
				case 2:
					mid[name] = owner
				}
			}
			if got := partition.Rebalance(names, change, mid); !maps.Equal(got, target) {
				t.Fatalf("P=%d, N=%d, round %d: Rebalance mid-hand-over differs from the target on %d partitions", p, n, i, moved(got, target))
			}
		}
	}
}
