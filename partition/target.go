package partition

import (
	"context"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/timing"
)

// watchMembers starts watching the membership, if the coordinator can and
// no watch runs; a failed or ended watch is tried again after RetryPeriod.
// Polling goes on meanwhile.
func (r *runner) watchMembers(ctx context.Context) {
	w, ok := r.g.c.(MembersWatcher)
	if !ok || r.watch != nil || time.Now().Before(r.nextWatch) {
		return
	}
	r.nextWatch = time.Now().Add(timing.RetryPeriod(r.cfg.TTL, r.cfg.RetryPeriod))
	ch, err := w.WatchMembers(ctx, r.cfg.Key)
	if err != nil {
		r.g.log.Warn("watching members failed; polling", "err", err)
		return
	}
	r.watch = ch
}

// readMembers reads the membership and debounces changes to it. When a
// member is gone (or the view is back to the settled one), it computes the
// target assignment at once, from the
// table as predicted (see predicted), so that a planned leave or a crash is
// acted on with one read of the membership; joins wait for the change to
// settle (the assignment costs O(P), and a join frees nothing). When the
// change settles, it computes the target from the partition table: read
// when this member's view settles for the first time, and otherwise when
// the read budget allows (readEvery), else as predicted and read as soon as
// the budget allows; and it reads the table again as scheduleRead says, so
// that members whose views of a hand-over differed agree again.
func (r *runner) readMembers() error {
	ms, ok := r.members()
	if !ok {
		return nil
	}
	ids, err := r.agreeing(ms)
	if err != nil {
		return err
	}
	self, _ := r.lease()
	r.twinned = slices.ContainsFunc(ms, func(m Member) bool { return m.ID == r.g.id && m.Epoch != self.Epoch })
	now := time.Now()
	changed := r.latest == nil || !slices.Equal(ids, r.latest)
	// A member gone, or a view back to the settled one (a member that was
	// gone for a moment, or this one after it lost its membership and
	// joined again): act on it at once.
	gone := changed && (slices.ContainsFunc(r.latest, func(id string) bool { return !slices.Contains(ids, id) }) ||
		slices.Equal(ids, r.effective))
	if changed {
		r.latest, r.changedAt = ids, now
	}
	// The first view settles too, so that members started together see
	// each other before claiming, instead of the first claiming everything.
	// A view settles once it has not changed for Debounce since it last
	// settled, even back to the settled view: the table moved meanwhile.
	settle := (r.settled == nil || r.changedAt.After(r.settledAt)) && now.Sub(r.changedAt) >= r.cfg.EffectiveDebounce()
	if r.settled == nil && !settle {
		return nil // a member neither claims nor hands over before its first view settles
	}
	budget := now.Sub(r.lastRead) >= r.readEvery(0)
	// Read when due; when the view settles (the first time always); and
	// when another member has held partitions this one's target gives it
	// for Debounce: the views differ.
	held := !r.heldSince.IsZero() && now.Sub(r.heldSince) >= r.cfg.EffectiveDebounce()
	read := !now.Before(r.nextRead) || (settle && (r.settled == nil || budget)) || (held && budget)
	if !read && !settle && !gone {
		return nil
	}
	basis, fresh := r.predicted(), false
	switch owners, ok := r.readTable(read, now); {
	case ok:
		basis, fresh = owners, true
	case read && !settle && !gone:
		return nil
	case settle: // verify the prediction as soon as the budget allows
		r.nextRead = minTime(r.nextRead, r.lastRead.Add(r.readEvery(0)))
	}
	r.setTarget(Rebalance(r.g.names, r.latest, basis))
	if fresh {
		r.scheduleRead(now, maps.Equal(r.target, basis))
	}
	if settle {
		r.effective, r.settledAt = r.latest, now
		r.g.log.Info("membership settled", "members", len(r.effective))
	}
	if settle || (r.settled != nil && slices.Equal(r.latest, r.effective)) {
		r.settled = r.target
	}
	return nil
}

// readTable reads who owns each partition, when read. A read that failed
// counts against the read budget (readEvery) as one that succeeded: it
// cost the coordinator as much, and a coordinator too slow to answer it in
// time is the one to spare. On failure it logs, and schedules the next try
// after RetryPeriod, doubled after each failure up to readEvery, while the
// caller goes on with the table as predicted (so that a member that cannot
// read it in time still settles and claims).
func (r *runner) readTable(read bool, now time.Time) (map[string]string, bool) {
	if !read {
		return nil, false
	}
	owners, ok := r.owners()
	r.lastRead = now
	if ok {
		r.readFails, r.heldSince = 0, time.Time{}
		return owners, true
	}
	wait := timing.RetryPeriod(r.cfg.TTL, r.cfg.RetryPeriod) << min(r.readFails, 16)
	r.readFails++
	r.nextRead = now.Add(min(wait, r.readEvery(timing.RetryPeriod(r.cfg.TTL, r.cfg.RetryPeriod))))
	return nil, false
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// setTarget makes t the target and lists the partitions it gives this
// member.
func (r *runner) setTarget(t map[string]string) {
	r.target, r.retarget = t, true
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
// serves the hand-over's claims), ten once it was, and never sooner than
// readEvery allows for the group's size; jittered by up to half, so that
// members that settled together do not all read it at once again.
func (r *runner) scheduleRead(now time.Time, settled bool) {
	every := 3 * r.renewInterval()
	if settled {
		every = 10 * r.renewInterval()
	}
	every = r.readEvery(every)
	r.nextRead = now.Add(every + rand.N(every/2+1))
}

// tableRows is how many partition rows a member reads a second, on
// average, for the reads that only guard against views that differed (the
// periodic reads, and Stats): reading the table costs the coordinator and
// the member O(P), and every member reads it.
const tableRows = 1000

// readEvery is every, or longer for a large group: P / tableRows seconds
// (100 s at P = 100,000), so that the safety-net reads of N members cost at
// most N·tableRows rows a second, whatever P.
func (r *runner) readEvery(every time.Duration) time.Duration {
	return max(every, time.Duration(len(r.g.names))*time.Second/tableRows)
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
func (r *runner) members() ([]Member, bool) {
	var ms []Member
	err := r.call(func(ctx context.Context) (err error) {
		ms, err = r.g.c.GroupMembers(ctx, r.cfg.Key)
		return err
	})
	if err != nil {
		r.membersDown.Failed(r.g.log, err)
		return nil, false
	}
	r.membersDown.Succeeded(r.g.log)
	return ms, true
}

// owners reads who owns each partition now (partition name → member ID),
// and keeps the grants it lists as this member's for freeOrphans.
func (r *runner) owners() (map[string]string, bool) {
	out := make(map[string]string)
	var listed map[string]tenure.Grant
	err := r.call(func(ctx context.Context) error {
		gs, err := r.g.c.GroupPartitions(ctx, r.cfg.Key)
		for _, gr := range gs {
			if name, ok := strings.CutPrefix(gr.Key, r.cfg.Key+"/"); ok {
				out[name] = gr.Holder
				if gr.Holder == r.g.id {
					if listed == nil {
						listed = make(map[string]tenure.Grant)
					}
					listed[name] = gr
				}
			}
		}
		return err
	})
	if err != nil {
		r.tableDown.Failed(r.g.log, err)
		return nil, false
	}
	r.tableDown.Succeeded(r.g.log)
	r.listed = listed
	return out, true
}

// freeOrphans releases the partitions that the table just read (see
// owners) lists as this member's, and that it neither runs, nor is
// releasing, nor is about to claim (doubtful, or given to it by the
// target): orphans. A claim whose call returned an error can be applied
// later (etcd forwards it late, over another connection), granting the
// partition again with a token this member never saw; a release of the
// grant it ran frees nothing then, and etcd's CheckPartitions, which
// judges by the lease, does not report it: the partition would stay this
// member's, run by nobody and refused to every other member, for as long
// as the membership lives.
//
// The release names the token listed, on this membership: it frees the
// partition only if that grant is still the latest on it. It is never a
// grant this member runs: a partition it runs is skipped, the steps run
// one at a time (no claim of this runner is under way, and none starts
// before the release), and a claim applied later grants a greater token.
func (r *runner) freeOrphans() {
	listed := r.listed
	r.listed = nil
	var orphans []string
	for n, gr := range listed {
		_, releasing := r.unsent[n]
		if r.owned[n] != nil || releasing || r.doubtful[n] || r.target[n] == r.g.id {
			continue
		}
		r.unsent[n] = gr
		orphans = append(orphans, n)
	}
	if len(orphans) > 0 {
		slices.Sort(orphans)
		r.g.log.Warn("releasing partitions owned but not run (a claim applied after its call failed)", "partitions", strings.Join(orphans, ","))
	}
}
