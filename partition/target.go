package partition

import (
	"context"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/tenure-dev/tenure"
)

// watchMembers starts watching the membership, if the coordinator can and
// no watch runs; a failed or ended watch is tried again after RetryPeriod.
// Polling goes on meanwhile.
func (r *runner) watchMembers(ctx context.Context) {
	w, ok := r.g.c.(tenure.MembersWatcher)
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
// table as predicted (see predicted), so that a planned leave is acted on
// at once with one read of the membership; it reads the partition table
// when the change settles, and then as scheduleRead says (so that members
// whose views of a hand-over differed agree again).
func (r *runner) readMembers() error {
	ms, ok := r.members()
	if !ok {
		return nil
	}
	ids, err := r.agreeing(ms)
	if err != nil {
		return err
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
		return nil
	}
	basis, fresh := r.predicted(), false
	if read {
		if owners, ok := r.owners(); ok {
			basis, fresh = owners, true
		} else {
			// Go on with the table as predicted, so that a member that
			// cannot read it in time still settles and claims; read
			// again after RetryPeriod.
			r.nextRead = now.Add(r.cfg.EffectiveRetryPeriod())
			if !changed && !settle {
				return nil
			}
		}
	}
	r.setTarget(Rebalance(r.g.names, r.latest, basis))
	if fresh {
		r.scheduleRead(now, maps.Equal(r.target, basis))
	}
	if settle {
		r.effective = r.latest
		r.g.log.Info("membership settled", "members", len(r.effective))
	}
	if settle || (r.settled != nil && slices.Equal(r.latest, r.effective)) {
		r.settled = r.target
	}
	return nil
}

// setTarget makes t the target and lists the partitions it gives this
// member.
func (r *runner) setTarget(t map[string]string) {
	r.target = t
	r.mine = r.mine[:0]
	for _, n := range r.g.names {
		if t[n] == r.g.id {
			r.mine = append(r.mine, n)
		}
	}
}

// scheduleRead sets when to read the table again after a read at now:
// three renewal intervals later while the table was not the target (a
// hand-over under way: the read is a safety net for members whose views
// differed, and reading P rows is not free for the coordinator while it
// serves the hand-over's claims), ten once it was; jittered by up to half,
// so that members that settled together do not all read it at once again.
func (r *runner) scheduleRead(now time.Time, settled bool) {
	every := 3 * r.renewInterval()
	if settled {
		every = 10 * r.renewInterval()
	}
	r.nextRead = now.Add(every + rand.N(every/2+1))
}

// predicted is the partition table as this member expects it to be: what
// it runs itself, and the other members' partitions of the previous target
// (where hand-overs were taking the table, the same for every member).
func (r *runner) predicted() map[string]string {
	out := make(map[string]string, len(r.target))
	for n, m := range r.target {
		if m != r.g.id {
			out[n] = m
		}
	}
	for n := range r.owned {
		out[n] = r.g.id
	}
	return out
}

// members reads the group's live members.
func (r *runner) members() ([]tenure.Member, bool) {
	var ms []tenure.Member
	err := r.call(func(ctx context.Context) (err error) {
		ms, err = r.g.c.GroupMembers(ctx, r.cfg.Key)
		return err
	})
	if err != nil {
		r.g.log.Warn("reading members failed", "err", err)
		return nil, false
	}
	return ms, true
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
