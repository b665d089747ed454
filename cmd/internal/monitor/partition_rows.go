package monitor

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tenure-dev/tenure/internal/display"

	"github.com/tenure-dev/tenure/partition"
)

// Orders of the rows of a PartitionPage.
const (
	// OrderIndex lists the rows by partition index.
	OrderIndex = "index"
	// OrderAttention lists the unowned partitions first (the longest
	// unowned first), then the recently moved (the latest first), then
	// the rest by index: what /status carries.
	OrderAttention = "attention"
)

// States that a PartitionQuery selects.
const (
	StateAll     = "all"
	StateUnowned = "unowned" // no live owner
	StateMoved   = "moved"   // owned, and moved within the move window
	StateOwned   = "owned"   // a live owner
	StateMine    = "mine"    // owned by this instance
)

// MaxPageRows is the most rows one PartitionPage holds.
const MaxPageRows = 1000

// ErrNoGroup is returned by Partitions for a group that is not shown.
var ErrNoGroup = errors.New("monitor: no such partition group")

// PartitionQuery selects rows of one partition table for
// /status/partitions, whose query parameters have the same names.
type PartitionQuery struct {
	// Group is the group's key; it may be empty when one group is shown.
	Group string
	// State is one of the State constants; empty means StateAll.
	State string
	// Owner keeps the partitions of one owner, by ID (holder#instance) or
	// display name; empty keeps all.
	Owner string
	// Name keeps the partitions whose name contains it.
	Name string
	// Order is OrderIndex (when empty) or OrderAttention.
	Order string
	// Offset is how many matching rows to skip; Limit how many to return
	// at most (DefaultStatusRows when zero, at most MaxPageRows).
	Offset, Limit int
}

// PartitionPage is what /status/partitions serves: one page of the rows
// of a group that match a PartitionQuery.
type PartitionPage struct {
	Group string `json:"group"`
	// Total is how many rows match; Offset and Limit are the query's.
	Total      int               `json:"total"`
	Offset     int               `json:"offset"`
	Limit      int               `json:"limit"`
	Partitions []PartitionStatus `json:"partitions"`
}

// validate checks q and fills its defaults.
func (q *PartitionQuery) validate() error {
	var errs []error
	q.State, q.Order, q.Limit = cmp.Or(q.State, StateAll), cmp.Or(q.Order, OrderIndex), cmp.Or(q.Limit, DefaultStatusRows)
	if !slices.Contains([]string{StateAll, StateUnowned, StateMoved, StateOwned, StateMine}, q.State) {
		errs = append(errs, fmt.Errorf("state %q: want all, unowned, moved, owned or mine", q.State))
	}
	if q.Order != OrderIndex && q.Order != OrderAttention {
		errs = append(errs, fmt.Errorf("order %q: want index or attention", q.Order))
	}
	if q.Offset < 0 {
		errs = append(errs, fmt.Errorf("offset %d: must not be negative", q.Offset))
	}
	if q.Limit < 1 || q.Limit > MaxPageRows {
		errs = append(errs, fmt.Errorf("limit %d: want 1 to %d", q.Limit, MaxPageRows))
	}
	return errors.Join(errs...)
}

// Partitions returns the page of rows that q selects, as of now. An
// invalid query's error names the bad parameter; a group not shown gets
// ErrNoGroup.
func (m *Monitor) Partitions(q PartitionQuery) (PartitionPage, error) {
	if err := q.validate(); err != nil {
		return PartitionPage{}, err
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	i := slices.IndexFunc(m.parts.tables, func(t partition.Table) bool { return t.Group == q.Group })
	if q.Group == "" && len(m.parts.tables) == 1 {
		i = 0
	}
	if i < 0 {
		return PartitionPage{}, fmt.Errorf("%w: group %q (shown: %d groups)", ErrNoGroup, q.Group, len(m.parts.tables))
	}
	t := &m.parts.tables[i]
	rows, total := m.rowsLocked(t, m.parts.groups[t.Group], q, now)
	return PartitionPage{Group: t.Group, Total: total, Offset: q.Offset, Limit: q.Limit, Partitions: rows}, nil
}

// rowsLocked returns the rows of t, tracked in g, that q selects, at now,
// and how many match.
func (m *Monitor) rowsLocked(t *partition.Table, g *groupView, q PartitionQuery, now time.Time) ([]PartitionStatus, int) {
	idx := make([]int, 0, len(t.Partitions))
	for i, r := range t.Partitions {
		if g.match(r, q, m.cfg.Identity) {
			idx = append(idx, i)
		}
	}
	if q.Order == OrderAttention {
		idx = g.attention(idx, t.Partitions)
	}
	lo, hi := min(q.Offset, len(idx)), min(q.Offset+q.Limit, len(idx))
	out := make([]PartitionStatus, 0, hi-lo)
	for _, i := range idx[lo:hi] {
		out = append(out, m.rowLocked(t.Group, g, t.Partitions[i], now))
	}
	return out, len(idx)
}

// match reports whether r is selected by q; self is this instance's ID.
func (g *groupView) match(r partition.Row, q PartitionQuery, self string) bool {
	switch q.State {
	case StateUnowned:
		if r.Owner != "" {
			return false
		}
	case StateOwned:
		if r.Owner == "" {
			return false
		}
	case StateMine:
		if r.Owner == "" || r.Owner != self {
			return false
		}
	case StateMoved:
		if _, ok := g.moved[r.Partition.Key]; !ok || r.Owner == "" {
			return false
		}
	}
	if q.Owner != "" && r.Owner != q.Owner && !strings.HasPrefix(r.Owner, q.Owner+"#") {
		return false
	}
	return q.Name == "" || strings.Contains(r.Partition.Name, q.Name)
}

// attention reorders idx, rows of rows by index: the unowned first (the
// longest unowned first), then the moved (the latest first), then the
// rest, each by index within equal times.
func (g *groupView) attention(idx []int, rows []partition.Row) []int {
	type ranked struct {
		i  int
		at time.Time
	}
	var unowned, moved []ranked
	rest := make([]int, 0, len(idx))
	for _, i := range idx {
		key := rows[i].Partition.Key
		if rows[i].Owner == "" {
			unowned = append(unowned, ranked{i, g.unowned[key]})
		} else if mv, ok := g.moved[key]; ok {
			moved = append(moved, ranked{i, mv.at})
		} else {
			rest = append(rest, i)
		}
	}
	slices.SortStableFunc(unowned, func(a, b ranked) int { return a.at.Compare(b.at) })
	slices.SortStableFunc(moved, func(a, b ranked) int { return b.at.Compare(a.at) })
	out := idx[:0]
	for _, r := range unowned {
		out = append(out, r.i)
	}
	for _, r := range moved {
		out = append(out, r.i)
	}
	return append(out, rest...)
}

// rowLocked is the status of row r of group, tracked in g, at now.
func (m *Monitor) rowLocked(group string, g *groupView, r partition.Row, now time.Time) PartitionStatus {
	ps := PartitionStatus{Group: group, Partition: r.Partition.Index, Name: r.Partition.Name, Key: r.Partition.Key}
	if r.Owner == "" {
		ps.UnownedMs = ms(now.Sub(g.unowned[r.Partition.Key]))
		return ps
	}
	ps.Held, ps.Token, ps.Mine = true, r.Token, r.Owner == m.cfg.Identity
	ps.Holder, ps.Instance = display.SplitIdentity(r.Owner)
	if l := g.leases[r.Owner]; l != nil {
		ps.Lease = l.status(now, m.every)
	}
	if mv, ok := g.moved[r.Partition.Key]; ok {
		ps.MovedMs = ms(now.Sub(mv.at))
		ps.From, _ = display.SplitIdentity(mv.from)
	}
	return ps
}
