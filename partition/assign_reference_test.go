package partition

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
)

// fillSorted is fill as it was first written: every pair sorted by key. It
// is the reference the heap must agree with, pair for pair.
func fillSorted(names []string, mh []uint64, left, owner []int) {
	n := uint64(len(mh))
	shift := bits.Len64(uint64(len(names)) * n)
	var pairs []uint64
	todo := 0
	for p, name := range names {
		if owner[p] != 0 {
			continue
		}
		todo++
		ph := hashString(name)
		for m := range mh {
			score := mix(ph ^ mh[m])
			pairs = append(pairs, score>>shift<<shift|uint64(p)*n+uint64(m))
		}
	}
	slices.Sort(pairs)
	mask := uint64(1)<<shift - 1
	for i := len(pairs) - 1; i >= 0 && todo > 0; i-- {
		idx := pairs[i] & mask
		p, m := idx/n, idx%n
		if owner[p] != 0 || left[m] <= 0 {
			continue
		}
		owner[p] = int(m) + 1
		left[m]--
		todo--
	}
}

// The heap's fill assigns exactly what sorting every pair assigns, for
// random groups, members and owners (some gone, some over their quota).
func TestFillMatchesSortedPairs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		p, n := 1+rng.IntN(300), 1+rng.IntN(12)
		names := make([]string, p)
		for j := range names {
			names[j] = fmt.Sprint(rng.IntN(1000000))
		}
		names = slices.Compact(slices.Sorted(slices.Values(names)))
		ms := make([]string, n)
		for j := range ms {
			ms[j] = fmt.Sprintf("m%d#%x", j, rng.Uint32())
		}
		slices.Sort(ms)
		ms = slices.Compact(ms)
		mh := make([]uint64, len(ms))
		for j, m := range ms {
			mh[j] = mix(hashString(m))
		}
		owners := map[string]string{}
		for _, name := range names {
			if rng.IntN(3) == 0 {
				owners[name] = fmt.Sprintf("gone%d", rng.IntN(3))
				if rng.IntN(2) == 0 {
					owners[name] = ms[rng.IntN(len(ms))]
				}
			}
		}
		leftA := quotas(len(names), ms, mh)
		ownerA := keep(names, ms, mh, owners, leftA)
		leftB, ownerB := slices.Clone(leftA), slices.Clone(ownerA)
		fill(names, mh, leftA, ownerA)
		fillSorted(names, mh, leftB, ownerB)
		if !slices.Equal(ownerA, ownerB) || !slices.Equal(leftA, leftB) {
			t.Fatalf("case %d (P=%d, N=%d): the heap assigned %v; sorting every pair assigned %v", i, len(names), len(ms), ownerA, ownerB)
		}
	}
}

// BenchmarkRebalance100k is a cold start's assignment at issue #23's size,
// P = 100,000 and N = 20, which every member computes.
func BenchmarkRebalance100k(b *testing.B) {
	names, ms := Names(100000), make([]string, 20)
	for i := range ms {
		ms[i] = fmt.Sprintf("member-%02d#1", i)
	}
	for b.Loop() {
		Rebalance(names, ms, nil)
	}
}

// BenchmarkFillSorted100k is the same with every pair sorted, for
// comparison.
func BenchmarkFillSorted100k(b *testing.B) {
	names, ms := Names(100000), make([]string, 20)
	for i := range ms {
		ms[i] = fmt.Sprintf("member-%02d#1", i)
	}
	mh := make([]uint64, len(ms))
	for i, m := range ms {
		mh[i] = mix(hashString(m))
	}
	for b.Loop() {
		left := quotas(len(names), ms, mh)
		fillSorted(names, mh, left, make([]int, len(names)))
	}
}
