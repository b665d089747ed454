package partition

import (
	"context"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// A MembersWatcher is a tenure.GroupCoordinator that tells members at once
// when a group's membership may have changed, so that a planned leave is
// acted on without waiting for the next poll (Config.SyncInterval). The
// etcd and postgres coordinators implement it.
type MembersWatcher interface {
	// WatchMembers returns a channel that receives a value soon after group
	// gains or loses a member (values are coalesced: one pending value
	// stands for any number of changes), and one at the start. It is
	// closed when ctx ends, when the coordinator is closed, or when the
	// watch fails; callers then poll, and may watch again.
	WatchMembers(ctx context.Context, group string) (<-chan struct{}, error)
}

// watchMembers starts watching the membership, if the coordinator can and
// no watch runs; a failed or ended watch is tried again after RetryPeriod.
// Polling goes on meanwhile.
func (r *runner) watchMembers(ctx context.Context) {
	w, ok := r.g.c.(MembersWatcher)
	if !ok || r.watch != nil || time.Now().Before(r.nextWatch) {
		return
	}
	r.nextWatch = time.Now().Add(r.cfg.EffectiveRetryPeriod())
	ch, err := w.WatchMembers(ctx, r.cfg.Key)
	if err != nil {
		r.g.log.Warn("watching members failed; polling", "err", err)
		return
	}
	r.watch = ch
}

// readMembers reads the membership and debounces changes to it. It
// computes the target assignment when the membership changes, from the
// previous target (the table that hand-overs were moving to, and every
// member computed the same), so that a planned leave is acted on at once
// with one read of the membership; it reads the partition table when the
// change settles, then every renewal interval while the table is not the
// target yet (so that members whose views of a hand-over differed agree
// again), and every ten renewal intervals once it is.
func (r *runner) readMembers() {
	ids, ok := r.members()
	if !ok {
		return
	}
	now := time.Now()
	changed := r.target == nil || !slices.Equal(ids, r.latest)
	if changed {
		r.latest, r.changedAt = ids, now
	}
	// The first view settles too, so that members started together see
	// each other before claiming, instead of the first claiming everything.
	settle := (r.settled == nil || !slices.Equal(r.latest, r.effective)) && now.Sub(r.changedAt) >= r.cfg.EffectiveDebounce()
	read := r.target == nil || settle || !now.Before(r.nextRead)
	if !changed && !read {
		return
	}
	basis := r.target
	if read {
		owners, ok := r.owners()
		if !ok {
			r.nextRead = time.Time{} // try again on the next round
			return
		}
		basis = owners
	}
	r.target = Rebalance(r.g.names, r.latest, basis)
	if read {
		// Jittered by up to half, so that members that settled together do
		// not all read the table at the same moment again.
		every := r.renewInterval()
		if maps.Equal(r.target, basis) {
			every *= 10
		}
		r.nextRead = now.Add(every + rand.N(every/2+1))
	}
	r.mine = r.mine[:0]
	for _, n := range r.g.names {
		if r.target[n] == r.g.id {
			r.mine = append(r.mine, n)
		}
	}
	if settle {
		r.effective = r.latest
		r.g.log.Info("membership settled", "members", len(r.effective))
	}
	if settle || (r.settled != nil && slices.Equal(r.latest, r.effective)) {
		r.settled = r.target
	}
}

// members reads the IDs of the group's live members.
func (r *runner) members() ([]string, bool) {
	var ids []string
	err := r.call(func(ctx context.Context) error {
		ms, err := r.g.c.GroupMembers(ctx, r.cfg.Key)
		for _, m := range ms {
			ids = append(ids, m.ID)
		}
		return err
	})
	if err != nil {
		r.g.log.Warn("reading members failed", "err", err)
		return nil, false
	}
	return ids, true
}

// owners reads who owns each partition now (partition name → member ID).
func (r *runner) owners() (map[string]string, bool) {
	out := make(map[string]string)
	err := r.call(func(ctx context.Context) error {
		gs, err := r.g.c.GroupPartitions(ctx, r.cfg.Key)
		for _, gr := range gs {
			if name, ok := strings.CutPrefix(gr.Key, r.cfg.Key+"/"); ok {
				out[name] = gr.Holder
			}
		}
		return err
	})
	if err != nil {
		r.g.log.Warn("reading the partition table failed", "err", err)
		return nil, false
	}
	return out, true
}
