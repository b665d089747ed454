package partition

import (
	"context"
	"slices"
	"time"

	"github.com/tenure-dev/tenure/internal/timing"

	"github.com/tenure-dev/tenure"
)

// Snapshot is what one member knows of itself, without a round trip
// (Group.Snapshot): for a member's own status display or health endpoint,
// and for tests that must know who runs what.
type Snapshot struct {
	// Member is the current membership; zero before joining and after
	// leaving.
	Member Member
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

// publish updates the snapshot and the owned-partitions gauge. It lists
// the partitions owned (O(P/N)) only when they changed, or RetryPeriod
// after it last did (for terms that ended by themselves): not at every
// step. Snapshot leaves out the terms ended meanwhile.
func (r *runner) publish() {
	s := Snapshot{Joined: r.joined, Members: r.latest}
	if r.joined {
		m, dl := r.lease()
		s.Member, s.Deadline = m, dl.Time()
	}
	r.g.mu.Lock()
	terms := r.g.terms
	s.Owned = r.g.snap.Owned
	r.g.mu.Unlock()
	if now := time.Now(); r.ownedChanged || !now.Before(r.nextPublish) {
		r.ownedChanged, r.nextPublish = false, now.Add(timing.RetryPeriod(r.cfg.TTL, r.cfg.RetryPeriod))
		s.Owned, terms = r.listOwned()
	}
	r.g.mu.Lock()
	r.g.snap, r.g.terms = s, terms
	r.g.mu.Unlock()
	r.g.metrics.SetOwned(r.cfg.Key, len(s.Owned))
}

// listOwned lists the partitions owned whose term is live, by index, with
// their terms.
func (r *runner) listOwned() ([]Owned, []*tenure.Term) {
	live := make([]*owned, 0, len(r.owned))
	for _, o := range r.owned {
		if o.term.Context().Err() == nil {
			live = append(live, o)
		}
	}
	slices.SortFunc(live, func(a, b *owned) int { return a.p.Index - b.p.Index })
	out := make([]Owned, len(live))
	terms := make([]*tenure.Term, len(live))
	for i, o := range live {
		out[i] = Owned{Partition: o.p, Token: o.term.Token()}
		terms[i] = o.term
	}
	return out, terms
}

// stats reads the partition table every renew interval (less often for a
// large group: see readEvery) and reports Stats, when metrics are
// collected.
func (r *runner) stats() {
	if _, nop := r.g.metrics.(nopMetrics); nop || time.Now().Before(r.nextStats) {
		return
	}
	r.nextStats = time.Now().Add(r.readEvery(timing.RenewInterval(r.cfg.TTL, r.cfg.RenewInterval)))
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
