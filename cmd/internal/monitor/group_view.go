package monitor

import (
	"maps"
	"slices"
	"time"

	"github.com/tenure-dev/tenure/partition"
)

// groupView is what the Monitor follows of one partition group from read
// to read: which partitions are unowned since when, which moved lately,
// and each member's lease.
type groupView struct {
	index   map[string]int       // partition key -> its row in rows
	rows    []partition.Row      // the table last read
	unowned map[string]time.Time // partition key -> start of the first read that found it unowned
	moved   map[string]move      // partition key -> its last move, within the move window
	owned   map[string]int       // member ID -> partitions it owned at the last read
	leases  map[string]*lease    // member ID -> its lease, shared by its partitions
}

// move is a partition's change of owner (a new token).
type move struct {
	at   time.Time // start of the read that saw it
	from string    // the owner before; "" when it was unowned
}

func newGroupView() *groupView {
	return &groupView{unowned: map[string]time.Time{}, moved: map[string]move{}, leases: map[string]*lease{}}
}

// update records t, read by a read begun at start; window is how long a
// move is kept.
func (g *groupView) update(t partition.Table, start time.Time, window time.Duration) {
	prev, prevIndex := g.rows, g.index
	if !sameKeys(prev, t.Partitions) {
		g.index = make(map[string]int, len(t.Partitions))
		for i, r := range t.Partitions {
			g.index[r.Partition.Key] = i
		}
	}
	owned := make(map[string]int)
	left := make(map[string]time.Duration) // member ID -> most time left on its partitions
	for i, r := range t.Partitions {
		key := r.Partition.Key
		if r.Owner == "" {
			if _, ok := g.unowned[key]; !ok {
				g.unowned[key] = start
			}
			continue
		}
		delete(g.unowned, key)
		owned[r.Owner]++
		left[r.Owner] = max(left[r.Owner], r.LeaseLeft)
		if p, ok := prevRow(prev, prevIndex, i, key); ok && p.Token != r.Token {
			g.moved[key] = move{at: start, from: p.Owner}
		}
	}
	g.forget(start, window)
	g.updateLeases(t.Members, left, start)
	g.rows, g.owned = t.Partitions, owned
}

// forget drops the moves older than window and the partitions no longer in
// the table.
func (g *groupView) forget(now time.Time, window time.Duration) {
	for k, mv := range g.moved {
		if _, ok := g.index[k]; !ok || now.Sub(mv.at) > window {
			delete(g.moved, k)
		}
	}
	for k := range g.unowned {
		if _, ok := g.index[k]; !ok {
			delete(g.unowned, k)
		}
	}
}

// updateLeases records the members' leases: the TTL each membership
// reports, and the most time left on each owner's partitions, read by a
// read begun at start. Leases of members gone and owning nothing are
// dropped.
func (g *groupView) updateLeases(members []partition.MemberRow, left map[string]time.Duration, start time.Time) {
	live := make(map[string]bool, len(members))
	get := func(id string) *lease {
		live[id] = true
		l := g.leases[id]
		if l == nil {
			l = &lease{}
			g.leases[id] = l
		}
		return l
	}
	for _, mr := range members {
		get(mr.ID).granted(mr.TTL) // the TTL granted, or the time left (memory, PostgreSQL)
	}
	for id, d := range left {
		get(id).read(start, d)
	}
	for id := range g.leases {
		if !live[id] {
			delete(g.leases, id)
		}
	}
}

// memberIDs are the members of t and the owners of its partitions that are
// no longer members, sorted.
func (g *groupView) memberIDs(t *partition.Table) []string {
	ids := make(map[string]bool, len(t.Members))
	for _, mr := range t.Members {
		ids[mr.ID] = true
	}
	for id := range g.owned {
		ids[id] = true
	}
	return slices.Sorted(maps.Keys(ids))
}

// sameKeys reports whether a and b are rows of the same partitions in the
// same order.
func sameKeys(a, b []partition.Row) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Partition.Key != b[i].Partition.Key {
			return false
		}
	}
	return true
}

// prevRow is the row of key in prev, whose index is prevIndex, found at i
// when the rows have not moved.
func prevRow(prev []partition.Row, prevIndex map[string]int, i int, key string) (partition.Row, bool) {
	if i < len(prev) && prev[i].Partition.Key == key {
		return prev[i], true
	}
	j, ok := prevIndex[key]
	if !ok {
		return partition.Row{}, false
	}
	return prev[j], true
}
