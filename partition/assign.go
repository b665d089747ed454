package partition

import (
	"hash/fnv"
	"slices"
	"sort"
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
		mh[i] = hashString(m)
	}
	type pair struct {
		score uint64
		p, m  int32
	}
	pairs := make([]pair, 0, len(names)*len(ms))
	for p, n := range names {
		ph := hashString(n)
		for m := range ms {
			pairs = append(pairs, pair{mix(ph ^ mix(mh[m])), int32(p), int32(m)})
		}
	}
	sort.Slice(pairs, func(i, j int) bool {
		a, b := pairs[i], pairs[j]
		if a.score != b.score {
			return a.score > b.score
		}
		if names[a.p] != names[b.p] {
			return names[a.p] < names[b.p]
		}
		return a.m < b.m
	})
	load := make([]int, len(ms))
	for _, pr := range pairs {
		n := names[pr.p]
		if _, taken := out[n]; taken || load[pr.m] >= capacity {
			continue
		}
		out[n] = ms[pr.m]
		load[pr.m]++
		if len(out) == len(names) {
			break
		}
	}
	return out
}

// hashString is 64-bit FNV-1a of s.
func hashString(s string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(s))
	return h.Sum64()
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
