package partition

import (
	"cmp"
	"math/bits"
	"slices"
	"strconv"
)

// Rebalance maps every partition name to the member that should own it,
// given owners, who owns each partition now (partition name → member ID;
// owners that are not in members count as gone). Every member computes the
// same map from the same names, members and owners, whatever their order.
//
// Each member gets a quota: ⌊P/N⌋, plus one for the P mod N members that
// rank first by a hash of their ID, so no member gets more than ⌈P/N⌉. A
// member keeps what it owns up to its quota (the partitions it scores
// highest on, by rendezvous hashing); the rest (free partitions, those of
// members gone, those over a quota) go by rendezvous hashing capped at the
// quotas left: each (partition, member) pair gets a pseudo-random score,
// pairs are taken in descending order of score, and a pair assigns its
// partition to its member unless the partition is taken or the member is
// full.
//
// So a join moves only the newcomer's quota (about P/(N+1)) off members
// over their new quota, a leave moves only the leaver's partitions, and the
// result is a fixed point: Rebalance(names, members, result) == result, and
// so is any state on the way to it (some moved partitions free, some
// claimed), which is what lets members that read the table at different
// moments of a hand-over agree. With no members, the map is empty; with no
// owners (nil), it is where a group that owns nothing yet puts every
// partition.
//
// Members call it themselves; it is exported for users who place work
// ahead of the group (warm a cache, start a standby on the member a
// partition will go to after a join or leave), and for tools that check
// that a table is settled: a fixed point of Rebalance (`tenure bench
// partitions`).
func Rebalance(names, members []string, owners map[string]string) map[string]string {
	out := make(map[string]string, len(names))
	if len(members) == 0 || len(names) == 0 {
		return out
	}
	ms := slices.Clone(members)
	slices.Sort(ms)
	ms = slices.Compact(ms)
	mh := make([]uint64, len(ms))
	for i, m := range ms {
		mh[i] = mix(hashString(m))
	}
	left := quotas(len(names), ms, mh)
	owner := keep(names, ms, mh, owners, left) // member index + 1; 0 while unassigned
	fill(names, mh, left, owner)
	for p, m := range owner {
		out[names[p]] = ms[m-1]
	}
	return out
}

// quotas returns each member's quota: ⌊P/N⌋, plus one for the P mod N
// members with the highest hash (ties by ID; ms is sorted).
func quotas(p int, ms []string, mh []uint64) []int {
	n := len(ms)
	q := make([]int, n)
	rank := make([]int, n)
	for i := range q {
		q[i], rank[i] = p/n, i
	}
	slices.SortStableFunc(rank, func(a, b int) int { return cmp.Compare(mh[b], mh[a]) })
	for _, i := range rank[:p%n] {
		q[i]++
	}
	return q
}

// keep gives each member of ms the partitions owners says it owns, up to
// its quota left (those it scores highest on), and returns the owner index
// (+1) of each partition, 0 for those not kept. It lowers left by what it
// kept.
func keep(names, ms []string, mh []uint64, owners map[string]string, left []int) []int {
	owner := make([]int, len(names))
	if len(owners) == 0 {
		return owner
	}
	index := make(map[string]int, len(ms))
	for i, m := range ms {
		index[m] = i
	}
	type held struct {
		p     int
		score uint64
	}
	mine := make([][]held, len(ms))
	for p, name := range names {
		if m, ok := index[owners[name]]; ok {
			mine[m] = append(mine[m], held{p, mix(hashString(name) ^ mh[m])})
		}
	}
	for m, hs := range mine {
		if len(hs) > left[m] {
			slices.SortFunc(hs, func(a, b held) int {
				return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(a.p, b.p))
			})
			hs = hs[:left[m]]
		}
		for _, h := range hs {
			owner[h.p] = m + 1
		}
		left[m] -= len(hs)
	}
	return owner
}

// fill assigns the partitions not yet owned (owner[p] == 0) by rendezvous
// hashing capped at the quotas left.
func fill(names []string, mh []uint64, left, owner []int) {
	// Each pair is one uint64: its score in the high bits, its index (p·N+m)
	// in the low bits, so that one integer sort orders pairs by score (ties
	// by index, deterministic since members are sorted and names ordered).
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
// p−1. It is exported for readers of a group that know only P (ReadTable
// takes the names).
func Names(p int) []string {
	out := make([]string, p)
	for i := range out {
		out[i] = strconv.Itoa(i)
	}
	return out
}
