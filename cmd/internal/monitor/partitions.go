package monitor

import (
	"context"
	"strings"
	"time"

	"github.com/tenure-dev/tenure/internal/display"
	"github.com/tenure-dev/tenure/internal/termctl"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/partition"
)

// PartitionStatus is one row of a partition table in Status and in
// /status/partitions.
type PartitionStatus struct {
	// Group is the group's key; Key is the partition's key, Group/Name.
	Group string `json:"group"`
	// Partition is the partition's index, Name its name.
	Partition int    `json:"partition"`
	Name      string `json:"name"`
	Key       string `json:"key"`
	// Held is false while the partition has no live owner.
	Held bool `json:"held"`
	// Holder is the owner's display name, Instance its instance id.
	Holder   string `json:"holder,omitempty"`
	Instance string `json:"instance,omitempty"`
	// Token is the owner's fencing token for the partition.
	Token uint64 `json:"token,omitempty"`
	// Lease is what is known of the owner's lease, which all its
	// partitions share; absent while unowned.
	Lease
	// Mine is true while this instance owns the partition.
	Mine bool `json:"mine"`
	// UnownedMs is how long this Monitor has seen the partition without an
	// owner; absent while owned.
	UnownedMs *int64 `json:"unowned_ms,omitempty"`
	// MovedMs is how long ago the partition got its owner (a new token:
	// claimed while unowned, or taken over from another member), when
	// that was within GroupStatus.MoveWindowMs; From is the owner before
	// (its display name; empty when it was unowned).
	MovedMs *int64 `json:"moved_ms,omitempty"`
	From    string `json:"from,omitempty"`
}

// GroupStatus summarizes one partition group in Status.
type GroupStatus struct {
	Group string `json:"group"`
	// Partitions is how many partitions the group has; Owned how many
	// have a live owner, Unowned how many have none.
	Partitions int `json:"partitions"`
	Owned      int `json:"owned"`
	Unowned    int `json:"unowned"`
	// Moved is how many owned partitions got their owner within the last
	// MoveWindowMs.
	Moved        int   `json:"moved"`
	MoveWindowMs int64 `json:"move_window_ms"`
	// Members is how many live members the group has; Cap is the most
	// partitions the assignment gives one: ⌈Partitions/Members⌉.
	Members int `json:"members"`
	Cap     int `json:"cap"`
	// Imbalance is the most partitions one member owns over the mean.
	Imbalance float64 `json:"imbalance"`
	// ByMember has one row per member, and per owner that is no longer a
	// member, sorted by ID.
	ByMember []MemberStatus `json:"by_member"`
}

// MemberStatus is one member of a partition group in GroupStatus.
type MemberStatus struct {
	// ID is the member's identity, holder#instance (what
	// /status/partitions?owner= takes); Holder its display name, Instance
	// its instance id.
	ID       string `json:"id"`
	Holder   string `json:"holder"`
	Instance string `json:"instance,omitempty"`
	// Owned is how many partitions it owns.
	Owned int `json:"owned"`
	// Mine is true for this instance.
	Mine bool `json:"mine"`
	// Lease is what is known of its lease: the time left is known once it
	// owns a partition (the coordinator reports it with the partitions).
	Lease
}

// partView is what the Monitor last read of the partition tables.
type partView struct {
	tables []partition.Table
	groups map[string]*groupView // by group key
}

// pollPartitions reads the partition tables, when there are any to show,
// given the grants the poll read, and returns the read's error.
func (m *Monitor) pollPartitions(ctx context.Context, grants []tenure.Grant) error {
	if m.cfg.Partitions == nil {
		return nil
	}
	start := time.Now()
	tables, err := m.cfg.Partitions(ctx, grants)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		return err
	}
	seen := make(map[string]bool, len(tables))
	for _, t := range tables {
		g := m.parts.groups[t.Group]
		if g == nil {
			g = newGroupView()
			m.parts.groups[t.Group] = g
		}
		g.update(t, start, m.cfg.MoveWindow)
		seen[t.Group] = true
	}
	for k := range m.parts.groups {
		if !seen[k] {
			delete(m.parts.groups, k)
		}
	}
	m.parts.tables = tables
	return nil
}

// withoutPartitions returns gs less the partitions of the tables shown,
// which are shown in their tables rather than as keys.
func (m *Monitor) withoutPartitions(gs []tenure.Grant) []tenure.Grant {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.parts.groups) == 0 {
		return gs
	}
	out := gs[:0:0]
	for _, g := range gs {
		if i := strings.LastIndexByte(g.Key, '/'); i > 0 {
			if gv := m.parts.groups[g.Key[:i]]; gv != nil {
				if _, ok := gv.index[g.Key]; ok {
					delete(m.keys, g.Key) // seen as a key before its group was found
					continue
				}
			}
		}
		out = append(out, g)
	}
	return out
}

// partitionsLocked fills s's partition groups and, for each, the rows to
// look at first, as of now.
func (m *Monitor) partitionsLocked(s *Status, now time.Time) {
	first := PartitionQuery{Order: OrderAttention, Limit: m.cfg.StatusRows}
	for i := range m.parts.tables {
		t := &m.parts.tables[i]
		g := m.parts.groups[t.Group]
		s.Groups = append(s.Groups, m.groupLocked(t, g, now))
		rows, _ := m.rowsLocked(t, g, first, now)
		s.Partitions = append(s.Partitions, rows...)
	}
}

// groupLocked is the summary of table t, tracked in g, at now.
func (m *Monitor) groupLocked(t *partition.Table, g *groupView, now time.Time) GroupStatus {
	gs := GroupStatus{
		Group: t.Group, Partitions: len(t.Partitions), Unowned: t.Stats.Unowned, Members: t.Stats.Members,
		Cap: t.Cap, Imbalance: t.Stats.Imbalance, MoveWindowMs: m.cfg.MoveWindow.Milliseconds(), ByMember: []MemberStatus{},
	}
	gs.Owned = gs.Partitions - gs.Unowned
	for k := range g.moved {
		if t.Partitions[g.index[k]].Owner != "" {
			gs.Moved++
		}
	}
	for _, id := range g.memberIDs(t) {
		ms := MemberStatus{ID: id, Owned: g.owned[id], Mine: id == m.cfg.Identity}
		ms.Holder, ms.Instance = display.SplitIdentity(id)
		if l := g.leases[id]; l != nil {
			ms.Lease = l.status(now, m.every)
		}
		gs.ByMember = append(gs.ByMember, ms)
	}
	return gs
}

// Record adds t, a transition of one of this instance's partition terms
// (partition.Config.OnTransition), to the recent transitions, with its
// true reason.
func (m *Monitor) Record(t tenure.Transition) {
	ev := Event{At: t.At, Key: t.Key, Token: t.Token, Reason: termctl.Reason(t.Kind), Source: SourceSelf}
	ev.Holder, ev.Instance = display.SplitIdentity(t.Holder)
	if ev.At.IsZero() {
		ev.At = time.Now()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.addLocked(ev)
}
