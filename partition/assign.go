package partition

import (
	"math/bits"
	"slices"
	"strconv"
)

// Assign maps every partition name to the member that should own it:
// rendezvous (highest random weight) hashing capped at ⌈P/N⌉ partitions per
// member. Each (partition, member) pair gets a pseudo-random score; pairs
// are taken in descending order of score, and a pair assigns its partition
// to its member unless the partition is taken or the member is full. Every
// member computes the same map from the same names and members, whatever
// their order. A join or leave moves about P/N partitions, and no member
// gets more than ⌈P/N⌉. With no members, the map is empty.
func Assign(names, members []string) map[string]string {
	out := make(map[string]string, len(names))
	if len(members) == 0 || len(names) == 0 {
		return out
	}
	ms := slices.Clone(members)
	slices.Sort(ms)
	ms = slices.Compact(ms)
	capacity := (len(names) + len(ms) - 1) / len(ms)

	mh := make([]uint64, len(ms))
	for i, m := range ms {
		mh[i] = mix(hashString(m))
	}
	// Each pair is one uint64: its score in the high bits, its index (p·N+m)
	// in the low bits, so that one integer sort orders pairs by score (ties
	// by index, deterministic since members are sorted and names ordered).
	n := uint64(len(ms))
	shift := bits.Len64(uint64(len(names)) * n)
	pairs := make([]uint64, 0, len(names)*len(ms))
	for p, name := range names {
		ph := hashString(name)
		for m := range ms {
			score := mix(ph ^ mh[m])
			pairs = append(pairs, score>>shift<<shift|uint64(p)*n+uint64(m))
		}
	}
	slices.Sort(pairs)
	load := make([]int, len(ms))
	owner := make([]int, len(names)) // member index + 1; 0 while unassigned
	mask := uint64(1)<<shift - 1
	for i, left := len(pairs)-1, len(names); i >= 0 && left > 0; i-- {
		idx := pairs[i] & mask
		p, m := idx/n, idx%n
		if owner[p] != 0 || load[m] >= capacity {
			continue
		}
		owner[p] = int(m) + 1
		load[m]++
		left--
	}
	for p, m := range owner {
		out[names[p]] = ms[m-1]
	}
	return out
}

// hashString is 64-bit FNV-1a of s.
func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// mix is splitmix64's finalizer: it spreads every input bit over the output.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Names returns the default names of p partitions: their indexes, "0" to
// p−1.
func Names(p int) []string {
	out := make([]string, p)
	for i := range out {
		out[i] = strconv.Itoa(i)
	}
	return out
}
