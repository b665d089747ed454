package monitor

import (
	"context"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/partition"
)

// PartitionStatus is one row of a partition table in Status.
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
	// LeaseLeftMs is the time left on the owner's lease as the coordinator
	// last reported it, counted down since; absent while unowned.
	LeaseLeftMs *int64 `json:"lease_left_ms,omitempty"`
	// Mine is true while this instance owns the partition.
	Mine bool `json:"mine"`
	// UnownedMs is how long this Monitor has seen the partition without an
	// owner; absent while owned.
	UnownedMs *int64 `json:"unowned_ms,omitempty"`
}

// GroupStatus summarizes one partition group in Status.
type GroupStatus struct {
	Group string `json:"group"`
	// Partitions is how many partitions the group has, Unowned how many
	// have no live owner.
	Partitions int `json:"partitions"`
	Unowned    int `json:"unowned"`
	// Members is how many live members the group has; Cap is the most
	// partitions the assignment gives one: ⌈Partitions/Members⌉.
	Members int `json:"members"`
	Cap     int `json:"cap"`
	// Imbalance is the most partitions one member owns over the mean.
	Imbalance float64 `json:"imbalance"`
}

// partView is what the Monitor last read of the partition tables.
type partView struct {
	tables  []partition.Table
	seenAt  time.Time            // when the tables were read
	unowned map[string]time.Time // partition key -> first poll that saw it unowned
}

// pollPartitions reads the partition tables, when there are any to show,
// given the grants the poll read, and returns the read's error.
func (m *Monitor) pollPartitions(ctx context.Context, grants []tenure.Grant) error {
	if m.cfg.Partitions == nil {
		return nil
	}
	tables, err := m.cfg.Partitions(ctx, grants)
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		return err
	}
	seen := make(map[string]bool)
	for _, t := range tables {
		for _, r := range t.Partitions {
			if r.Owner != "" {
				continue
			}
			seen[r.Partition.Key] = true
			if _, ok := m.parts.unowned[r.Partition.Key]; !ok {
				m.parts.unowned[r.Partition.Key] = now
			}
		}
	}
	for k := range m.parts.unowned {
		if !seen[k] {
			delete(m.parts.unowned, k)
		}
	}
	m.parts.tables, m.parts.seenAt = tables, now
	return nil
}

// partitionsLocked fills s's partition tables as of now.
func (m *Monitor) partitionsLocked(s *Status, now time.Time) {
	since := now.Sub(m.parts.seenAt)
	for _, t := range m.parts.tables {
		s.Groups = append(s.Groups, GroupStatus{
			Group: t.Group, Partitions: len(t.Partitions), Unowned: t.Stats.Unowned,
			Members: t.Stats.Members, Cap: t.Cap, Imbalance: t.Stats.Imbalance,
		})
		for _, r := range t.Partitions {
			ps := PartitionStatus{Group: t.Group, Partition: r.Partition.Index, Name: r.Partition.Name, Key: r.Partition.Key}
			if r.Owner == "" {
				ps.UnownedMs = ms(now.Sub(m.parts.unowned[r.Partition.Key]))
			} else {
				ps.Held, ps.Token, ps.Mine = true, r.Token, r.Owner == m.cfg.Identity
				ps.Holder, ps.Instance = tenure.SplitIdentity(r.Owner)
				ps.LeaseLeftMs = ms(max(r.LeaseLeft-since, 0))
			}
			s.Partitions = append(s.Partitions, ps)
		}
	}
}

// Record adds t, a transition of one of this instance's partition terms
// (partition.Config.OnTransition), to the recent transitions, with its
// true reason.
func (m *Monitor) Record(t tenure.Transition) {
	ev := Event{At: t.At, Key: t.Key, Token: t.Token, Reason: t.Kind.Reason(), Source: SourceSelf}
	ev.Holder, ev.Instance = tenure.SplitIdentity(t.Holder)
	if ev.At.IsZero() {
		ev.At = time.Now()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.addLocked(ev)
}
