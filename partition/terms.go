package partition

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tenure-dev/tenure/internal/timing"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/timerwait"
)

// claim claims, in one batch (see claimBatch), the free partitions the
// latest membership gives this member and that it does not own, and starts
// a term for each. It reports whether some are left to claim.
//
// A claim whose outcome is unknown (its reply lost, or a partition's
// result an error) may have made this member the owner of partitions it
// does not run. Those are doubtful: the next claims ask for them again,
// whether the membership still gives them to this member or not, because a
// claim of a partition this member owns grants it again. It is then run,
// or released when another member is to run it. That costs a claim of the
// doubtful partitions, where reading the whole partition table to find
// them cost O(P), retried at every step while the coordinator was too slow
// to answer it: at 100,000 partitions, a loop that kept a loaded
// coordinator too busy to renew memberships.
func (r *runner) claim() (more bool) {
	m, dl := r.lease()
	if r.settled == nil || dl.Until() <= 0 {
		return false // no settled view yet (just joined), or no renewal in time
	}
	now := time.Now()
	names, more := r.toClaim(now)
	if len(names) == 0 {
		return false
	}
	var res []ClaimResult
	err := r.call(func(ctx context.Context) (err error) {
		res, err = r.g.c.ClaimPartitions(ctx, m, names)
		return err
	})
	r.batch.took(len(names), time.Since(now), timing.RetryPeriod(r.cfg.TTL, r.cfg.RetryPeriod)/2, err != nil)
	if errors.Is(err, tenure.ErrLost) {
		r.lost(err)
		return false
	}
	if err != nil {
		r.g.log.Warn("claim failed; claiming these partitions again", "partitions", len(names), "err", err)
		for _, n := range names {
			r.doubtful[n] = true
		}
		return false
	}
	claimed := r.claimed(names, res, now)
	return more && claimed > 0
}

// toClaim lists at most a batch of partitions to claim: the doubtful ones,
// then those the latest membership gives this member that it does not run,
// is not releasing and did not give up a moment ago. more reports whether
// some were left out.
func (r *runner) toClaim(now time.Time) (names []string, more bool) {
	size := r.batch.next()
	for n := range r.doubtful {
		if _, releasing := r.unsent[n]; releasing || r.owned[n] != nil {
			delete(r.doubtful, n) // its grant is known: not doubtful
			continue
		}
		if len(names) == size {
			return names, true
		}
		names = append(names, n)
	}
	for _, n := range r.mine {
		if r.owned[n] != nil || r.doubtful[n] {
			continue
		}
		if _, releasing := r.unsent[n]; releasing || now.Before(r.cooldown[n]) {
			continue
		}
		if len(names) == size {
			return names, true
		}
		names = append(names, n)
	}
	return names, false
}

// claimed acts on the results of a claim of names: it starts a term for
// each partition granted that the latest membership gives this member,
// queues the others granted for release, and keeps those whose outcome is
// unknown doubtful. It returns how many terms it started.
func (r *runner) claimed(names []string, res []ClaimResult, now time.Time) (claimed int) {
	unknown := 0
	var firstErr error
	_, dl := r.lease()
	for i, cr := range res {
		n := names[i]
		mine := r.target[n] == r.g.id
		if cr.Err == nil || errors.Is(cr.Err, tenure.ErrHeld) {
			delete(r.doubtful, n)
		}
		switch {
		case cr.Err == nil && mine && dl.Until() > 0:
			r.start(r.g.byName[n], cr.Grant)
			claimed++
		case cr.Err == nil: // a doubtful partition for another member, or past the deadline
			r.unsent[n] = cr.Grant
		case !errors.Is(cr.Err, tenure.ErrHeld):
			r.refuse(cr.Err)
			unknown++
			r.doubtful[n] = true
			firstErr = cmp.Or(firstErr, cr.Err)
		case mine && r.heldSince.IsZero(): // held by another member: see readMembers
			r.heldSince = now
		}
		if mine && errors.Is(cr.Err, tenure.ErrHeld) {
			r.heldBy(n, cr.Err, now)
		}
	}
	if unknown > 0 {
		r.g.log.Warn("claims failed; claiming these partitions again", "partitions", unknown, "err", firstErr)
	}
	if claimed > 0 {
		r.g.log.Info("claimed partitions", "claimed", claimed, "asked", len(names), "owned", len(r.owned))
	}
	return claimed
}

// start runs the function for p under a new term for grant gr.
func (r *runner) start(p Partition, gr tenure.Grant) {
	t := r.ml.Start(r.ctx, gr)
	work, stop := context.WithCancelCause(t.Context())
	o := &owned{p: p, term: t, stop: stop}
	r.owned[p.Name] = o
	r.mu.Lock()
	r.live[p.Name] = liveTerm{grant: gr, term: t}
	r.mu.Unlock()
	r.ownedChanged = true
	r.g.metrics.Moved(r.cfg.Key, MoveClaimed)
	r.transition(tenure.Elected, o, nil)
	go func() {
		err := r.fn(work, p, t)
		r.returnedMu.Lock()
		o.err = err
		r.returned = append(r.returned, o)
		r.returnedMu.Unlock()
		r.poke()
	}()
}

// handOver stops the functions of partitions that both the settled and the
// latest membership give to another member; they are released once they
// have returned. A partition the latest membership gives to this member is
// kept (it may just have been claimed, free), and one only the latest
// membership moves waits for the change to settle. It looks at the
// partitions owned only when the target has changed since it last did: a
// partition claimed since is one the target gives this member.
func (r *runner) handOver() {
	if r.settled == nil || !r.retarget {
		return
	}
	r.retarget = false
	for n, o := range r.owned {
		if o.reason == "" && r.settled[n] != r.g.id && r.target[n] != r.g.id {
			o.reason = MoveRebalanced
			o.stop(fmt.Errorf("%w: partition %q handed over", tenure.ErrNotLeader, n))
		}
	}
}

// reap collects the partitions whose function has returned (each queued
// itself on returned, so that a step costs nothing per partition owned): it
// ends their terms, reports why, and queues their release.
func (r *runner) reap() {
	r.returnedMu.Lock()
	done := r.returned
	r.returned = nil
	r.returnedMu.Unlock()
	for _, o := range done {
		r.finish(o, o.err)
		delete(r.owned, o.p.Name)
		r.mu.Lock()
		if l, ok := r.live[o.p.Name]; ok && l.grant.Token == o.term.Token() {
			delete(r.live, o.p.Name)
		}
		r.mu.Unlock()
		r.ownedChanged = true
	}
}

// finish ends o's term after its function returned err.
func (r *runner) finish(o *owned, err error) {
	kind := tenure.Resigned
	if errors.Is(termCause(o.term), tenure.ErrLost) {
		o.keep = true // the coordinator says it is not this member's: nothing to release
	}
	switch {
	case tenure.IsStale(err):
		r.ml.End(o.term, fmt.Errorf("%w: fenced by resource: %w", tenure.ErrNotLeader, err))
		kind, o.reason = tenure.Fenced, MoveFenced
		r.cooldown[o.p.Name] = time.Now().Add(timing.RetryPeriod(r.cfg.TTL, r.cfg.RetryPeriod))
	case o.term.Context().Err() != nil:
		kind = tenure.Expired
		if errors.Is(termCause(o.term), tenure.ErrLost) {
			kind = tenure.Lost
		}
		if o.reason == "" {
			o.reason = MoveLost
		}
	case o.reason == "":
		o.reason = MoveReturned
		r.cooldown[o.p.Name] = time.Now().Add(timing.RetryPeriod(r.cfg.TTL, r.cfg.RetryPeriod))
		if err != nil {
			r.g.log.Warn("partition function failed", "partition", o.p.Name, "token", o.term.Token(), "err", err)
		}
	}
	r.ml.End(o.term, fmt.Errorf("%w: partition %q given up (%s)", tenure.ErrNotLeader, o.p.Name, o.reason))
	r.g.metrics.Moved(r.cfg.Key, o.reason)
	r.transition(kind, o, termCause(o.term))
	if !o.keep {
		r.unsent[o.p.Name] = o.term.Grant()
	}
}

// release releases, in one batch, every partition given up and not yet
// released.
func (r *runner) release() {
	if len(r.unsent) == 0 || !r.joined {
		return
	}
	gs := make([]tenure.Grant, 0, len(r.unsent))
	for _, gr := range r.unsent {
		gs = append(gs, gr)
	}
	m, _ := r.lease()
	err := r.call(func(ctx context.Context) error {
		return r.g.c.ReleasePartitions(ctx, m, gs)
	})
	if err != nil {
		r.g.log.Warn("release failed; retrying", "partitions", len(gs), "err", err)
		return
	}
	clear(r.unsent)
}

// transition reports a transition of o's term to the OnTransition hook.
func (r *runner) transition(kind tenure.TransitionKind, o *owned, err error) {
	if kind == tenure.Resigned {
		err = nil
	}
	if r.cfg.OnTransition != nil {
		r.cfg.OnTransition(tenure.Transition{Kind: kind, Key: o.p.Key, Holder: r.g.id, Token: o.term.Token(), At: time.Now(), Err: err})
	}
}

// leave stops every function, waits for them all and leaves the group in
// one call, which frees every partition at once, so that other members
// take over without waiting for a TTL. The membership is no longer renewed
// meanwhile. As the Elector releases only after its function returned, a
// function that overruns its deadline keeps the member in the group, and
// so its partitions out of other members' reach, until it returns or the
// membership's lease lapses on the coordinator, about TTL·MaxDrift +
// Margin after the deadline: then a successor may claim them, while the
// overrunning function's term has ended (at the deadline: its Check fails)
// and only the resources' fencing stops its late writes.
func (r *runner) leave() {
	if r.joined {
		r.stopRenew()
	}
	m, dl := r.lease()
	for _, o := range r.owned {
		if o.reason == "" {
			o.reason = MoveLeft
		}
		o.stop(fmt.Errorf("%w: leaving the group", tenure.ErrNotLeader))
	}
	timer := time.NewTimer(timerwait.Delay(dl.Until()))
	defer timer.Stop()
	for len(r.owned) > 0 {
		select {
		case <-r.wake: // a function returned (or an earlier poke)
		case <-timer.C:
			r.overrun()
		}
		r.reap()
	}
	if r.joined {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), timing.RequestTimeout(r.cfg.TTL, r.cfg.RenewInterval, r.cfg.RequestTimeout))
		if err := r.g.c.LeaveGroup(ctx, m); err != nil {
			r.g.log.Warn("leave failed; the membership will expire on its own", "err", err)
		}
		cancel()
		r.joined = false
		r.ml.Stop()
	}
	clear(r.unsent)
	r.publish()
	r.g.log.Info("left")
}

// overrun ends the terms of the functions still running at the local
// deadline while leaving, and says what becomes of their partitions.
func (r *runner) overrun() {
	names := make([]string, 0, len(r.owned))
	for n, o := range r.owned {
		r.ml.End(o.term, fmt.Errorf("%w: left the group", tenure.ErrNotLeader))
		names = append(names, n)
	}
	if r.joined {
		m, _ := r.lease()
		slices.Sort(names)
		r.g.log.Warn("leaving: partition functions still running past the local deadline; the member stays in the group, holding its partitions, until they return or its lease (no longer renewed) lapses",
			"partitions", strings.Join(names, ","), "epoch", m.Epoch)
	}
}

// termCause is why term t ended: an error matching tenure.ErrNotLeader; nil
// while it is live.
func termCause(t *tenure.Term) error {
	if t.Context().Err() == nil {
		return nil
	}
	return context.Cause(t.Context())
}
