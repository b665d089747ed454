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
// It places work ahead of the group (warm a cache, start a standby on the
// member a partition will go to after a join or leave), and tells whether
// a table is settled: a settled table is a fixed point of Rebalance.
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
// hashing capped at the quotas left: pairs (partition, member) are taken in
// descending order of a key, and a pair assigns its partition to its member
// unless the partition is taken or the member is full. A pair's key is its
// score in the high bits and its index (p·N+m) in the low bits, so that keys
// are distinct and ties of score go by index (deterministic, since members
// are sorted and names ordered).
//
// Sorting every pair would cost O(P·N·log(P·N)), and each member computes
// this: instead, a max-heap holds one key per partition, its best pair
// among the members that had room when it was computed. A member only ever
// fills up, so that key bounds the partition's best pair still possible:
// the top of the heap, if its member still has room, is the greatest pair
// still possible of all, which the sort would take next; if its member is
// full, its partition's best pair is computed again and pushed back. The
// result is exactly the sort's, in O(P·N) mostly.
func fill(names []string, mh []uint64, left, owner []int) {
	n := uint64(len(mh))
	shift := bits.Len64(uint64(len(names)) * n)
	mask := uint64(1)<<shift - 1
	ph := make([]uint64, len(names))
	// best is partition p's greatest pair key among members with room.
	best := func(p int) (uint64, bool) {
		var top uint64
		found := false
		for m := range mh {
			if left[m] <= 0 {
				continue
			}
			k := mix(ph[p]^mh[m])>>shift<<shift | uint64(p)*n + uint64(m)
			if !found || k > top {
				top, found = k, true
			}
		}
		return top, found
	}
	var h maxHeap
	for p, name := range names {
		if owner[p] != 0 {
			continue
		}
		ph[p] = hashString(name)
		if k, ok := best(p); ok {
			h = append(h, k)
		}
	}
	h.init()
	for len(h) > 0 {
		k := h[0]
		p, m := int((k&mask)/n), int((k&mask)%n)
		if left[m] > 0 {
			owner[p] = m + 1
			left[m]--
			h.pop()
			continue
		}
		if k, ok := best(p); ok {
			h[0] = k
			h.down(0)
		} else {
			h.pop()
		}
	}
}

// maxHeap is a binary max-heap of pair keys.
type maxHeap []uint64

func (h maxHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

// down moves the key at i down to its place.
func (h maxHeap) down(i int) {
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if c+1 < len(h) && h[c+1] > h[c] {
			c++
		}
		if h[i] >= h[c] {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// pop removes the greatest key.
func (h *maxHeap) pop() {
	old := *h
	last := len(old) - 1
	old[0] = old[last]
	*h = old[:last]
	h.down(0)
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
