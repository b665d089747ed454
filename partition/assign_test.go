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

func TestAssignBalance(t *testing.T) {
	for _, tc := range []struct{ p, n int }{{1, 1}, {1, 3}, {7, 3}, {64, 5}, {100, 10}, {1000, 7}, {10000, 10}} {
		t.Run(fmt.Sprintf("P=%d,N=%d", tc.p, tc.n), func(t *testing.T) {
			a := partition.Assign(partition.Names(tc.p), members(tc.n))
			if len(a) != tc.p {
				t.Fatalf("Assign() assigned %d partitions; want %d", len(a), tc.p)
			}
			limit := (tc.p + tc.n - 1) / tc.n
			for m, l := range loads(a) {
				if l > limit {
					t.Errorf("member %s owns %d partitions; want ≤ ⌈P/N⌉ = %d", m, l, limit)
				}
			}
		})
	}
}

func TestAssignDeterministic(t *testing.T) {
	names, ms := partition.Names(500), members(6)
	want := partition.Assign(names, ms)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5 {
		shuffled := append([]string(nil), ms...)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if got := partition.Assign(names, shuffled); !maps.Equal(got, want) {
			t.Fatalf("Assign(members in order %v) differs from Assign(members in order %v) on %d partitions", shuffled, ms, moved(got, want))
		}
	}
}

func TestAssignMovesLittle(t *testing.T) {
	for _, tc := range []struct{ p, n int }{{100, 4}, {1000, 10}, {10000, 10}} {
		t.Run(fmt.Sprintf("P=%d,N=%d", tc.p, tc.n), func(t *testing.T) {
			names, ms := partition.Names(tc.p), members(tc.n+1)
			before := partition.Assign(names, ms[:tc.n])
			after := partition.Assign(names, ms)
			limit := 1.1 * float64(tc.p) / float64(tc.n)
			if got := moved(before, after); float64(got) > limit {
				t.Errorf("a join moved %d partitions; want ≤ 1.1·P/N = %.0f", got, limit)
			}
			if got := moved(after, before); float64(got) > limit {
				t.Errorf("a leave moved %d partitions; want ≤ 1.1·P/N = %.0f", got, limit)
			}
			// A leave of a member in the middle of the sorted list.
			without := append(append([]string(nil), ms[:tc.n/2]...), ms[tc.n/2+1:]...)
			if got := moved(after, partition.Assign(names, without)); float64(got) > limit {
				t.Errorf("leave of %s moved %d partitions; want ≤ %.0f", ms[tc.n/2], got, limit)
			}
		})
	}
}
