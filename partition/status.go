package partition

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/tenure-dev/tenure"
)

// Snapshot is what one member knows of itself, for status displays.
type Snapshot struct {
	// Member is the current membership; zero before joining and after
	// leaving.
	Member tenure.Member
	// Joined reports whether the member is in the group now.
	Joined bool
	// Deadline is the member's local deadline, shared by every term.
	Deadline time.Time
	// Members are the member IDs as last read, sorted.
	Members []string
	// Owned are the partitions this member runs now, by index.
	Owned []Owned
}

// Owned is one partition a member runs.
type Owned struct {
	// Partition is the partition.
	Partition Partition
	// Token is its term's fencing token.
	Token uint64
}

// Snapshot returns what this member knows of itself now. Owned lists only
// the terms still live at the call.
func (g *Group) Snapshot() Snapshot {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.snap
	s.Members = slices.Clone(s.Members)
	s.Owned = nil
	for i, o := range g.snap.Owned {
		if g.terms[i].Remaining() > 0 {
			s.Owned = append(s.Owned, o)
		}
	}
	return s
}

// publish updates the snapshot and the owned-partitions gauge.
func (r *runner) publish() {
	s := Snapshot{Joined: r.joined, Members: r.latest}
	if r.joined {
		s.Member, s.Deadline = r.member, r.deadline.Time()
	}
	live := make([]*owned, 0, len(r.owned))
	for _, o := range r.owned {
		if !o.ctl.Ended() {
			live = append(live, o)
		}
	}
	slices.SortFunc(live, func(a, b *owned) int { return a.p.Index - b.p.Index })
	terms := make([]*tenure.Term, len(live))
	for i, o := range live {
		s.Owned = append(s.Owned, Owned{Partition: o.p, Token: o.term.Token()})
		terms[i] = o.term
	}
	r.g.mu.Lock()
	r.g.snap, r.g.terms = s, terms
	r.g.mu.Unlock()
	r.g.metrics.SetOwned(r.cfg.Key, len(s.Owned))
}

// stats reads the partition table every renew interval and reports Stats,
// when metrics are collected.
func (r *runner) stats() {
	if _, nop := r.g.metrics.(NopMetrics); nop || time.Now().Before(r.nextStats) {
		return
	}
	r.nextStats = time.Now().Add(r.cfg.EffectiveRenewInterval())
	var t Table
	err := r.call(func(ctx context.Context) (err error) {
		t, err = readTable(ctx, r.g.c, r.cfg.Key, r.g.names)
		return err
	})
	if err != nil {
		r.g.log.Warn("reading the partition table failed", "err", err)
		return
	}
	now := time.Now()
	s := t.Stats
	seen := make(map[string]bool)
	for _, row := range t.Partitions {
		if row.Owner != "" {
			continue
		}
		seen[row.Partition.Name] = true
		since, ok := r.unowned[row.Partition.Name]
		if !ok {
			since = now
			r.unowned[row.Partition.Name] = now
		}
		s.OldestUnowned = max(s.OldestUnowned, now.Sub(since))
	}
	for n := range r.unowned {
		if !seen[n] {
			delete(r.unowned, n)
		}
	}
	r.g.metrics.SetStats(r.cfg.Key, s)
}

// Table is a group's partition table as the coordinator holds it.
type Table struct {
	// Group is the group's key.
	Group string
	// Partitions has one row per partition, by index.
	Partitions []Row
	// Members has one row per live member, sorted by ID.
	Members []MemberRow
	// Cap is the most partitions the assignment gives one member: ⌈P/N⌉.
	Cap int
	// Stats summarizes the table (OldestUnowned is not known from one
	// reading and is 0).
	Stats Stats
}

// Row is one partition's line of a Table.
type Row struct {
	// Partition is the partition.
	Partition Partition
	// Owner is the owning member's ID; empty when the partition is free.
	Owner string
	// Token is the owner's fencing token; 0 when free.
	Token uint64
	// LeaseLeft is the time left on the owner's lease, on the coordinator's
	// clock.
	LeaseLeft time.Duration
}

// MemberRow is one member's line of a Table.
type MemberRow struct {
	// ID is the member's identity.
	ID string
	// TTL is the time left on its lease, or the TTL granted on backends
	// that do not report the time left with the membership (etcd).
	TTL time.Duration
	// Owned is how many partitions it owns.
	Owned int
}

// ReadTable reads group's partition table and members from c, which must
// implement tenure.GroupCoordinator, for the partitions named names (see
// Names). It is what `tenure status` shows for a group.
func ReadTable(ctx context.Context, c tenure.Coordinator, group string, names []string) (Table, error) {
	gc, ok := c.(tenure.GroupCoordinator)
	if !ok {
		return Table{}, fmt.Errorf("%w: coordinator %T cannot run partition groups", tenure.ErrInvalidConfig, c)
	}
	return readTable(ctx, gc, group, names)
}

func readTable(ctx context.Context, gc tenure.GroupCoordinator, group string, names []string) (Table, error) {
	ms, err := gc.GroupMembers(ctx, group)
	if err != nil {
		return Table{}, fmt.Errorf("partition: read members of %q: %w", group, err)
	}
	gs, err := gc.GroupPartitions(ctx, group)
	if err != nil {
		return Table{}, fmt.Errorf("partition: read partitions of %q: %w", group, err)
	}
	t := Table{Group: group, Partitions: make([]Row, len(names))}
	index := make(map[string]int, len(names))
	for i, n := range names {
		index[tenure.PartitionKey(group, n)] = i
		t.Partitions[i].Partition = Partition{Index: i, Name: n, Key: tenure.PartitionKey(group, n)}
	}
	owned := make(map[string]int)
	for _, gr := range gs {
		if i, ok := index[gr.Key]; ok {
			row := &t.Partitions[i]
			row.Owner, row.Token, row.LeaseLeft = gr.Holder, gr.Token, gr.TTL
			owned[gr.Holder]++
		}
	}
	t.Stats = summarize(len(names), len(ms), owned)
	for _, m := range ms {
		t.Members = append(t.Members, MemberRow{ID: m.ID, TTL: m.TTL, Owned: owned[m.ID]})
	}
	if len(ms) > 0 {
		t.Cap = (len(names) + len(ms) - 1) / len(ms)
	}
	return t, nil
}

// summarize computes Stats for p partitions over n members owning owned.
func summarize(p, n int, owned map[string]int) Stats {
	s := Stats{Members: n, Unowned: p}
	most := 0
	for _, k := range owned {
		s.Unowned -= k
		most = max(most, k)
	}
	if n > 0 {
		s.Imbalance = float64(most) / (float64(p) / float64(n))
	}
	return s
}
