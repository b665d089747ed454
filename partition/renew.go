package partition

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/timerwait"
	"github.com/tenure-dev/tenure/internal/timing"
)

// liveTerm is a partition this member runs, as a check sees it.
type liveTerm struct {
	grant tenure.Grant
	ctl   termControl
}

// startRenewer starts the goroutine that renews membership m, whose terms'
// local deadline is dl, on its own schedule (see renewLoop); stopRenew
// stops it and waits for it.
func (r *runner) startRenewer(m Member, dl tenure.Instant) {
	ctx, cancel := context.WithCancel(r.ctx)
	done := make(chan struct{})
	shared := r.shared
	go func() {
		defer close(done)
		r.renewLoop(ctx, shared, m, dl)
	}()
	r.stopRenew = func() { cancel(); <-done }
}

// renewLoop renews membership m until ctx ends or the coordinator reports
// it lost, in a goroutine of its own, so that a renewal never waits behind
// a claim, a release, a read of the membership or of the partition table,
// or the step that makes them. Renewals follow the Elector's schedule (see
// nextRenewal); a failed one is retried every RetryPeriod until the local
// deadline.
//
// Each renewal is sent with a check that this member still owns every
// partition it runs (see check), both in flight at once (the renewal from
// a goroutine of its own, so that neither waits for the other's reply), and
// extends the terms (shared) only when both answered: so a partition freed
// by someone else (an operator's `tenure release --force`, etcdctl del, an
// UPDATE) and perhaps claimed by another member since is run here at most
// until the reply of the next check, one renewal interval plus a round trip
// later, and never past the deadline of the last renewal sent with a check
// that answered: a safe lease. A check is bounded by the next renewal's due time, so it never
// delays it, and a check that fails keeps neither the membership from being
// renewed nor its place in the group.
func (r *runner) renewLoop(ctx context.Context, shared sharedDeadline, m Member, dl tenure.Instant) {
	retry := timing.RetryPeriod(r.cfg.TTL, r.cfg.RetryPeriod)
	base := m // the membership whose renewal (or join) gave dl
	timer := time.NewTimer(timerwait.Delay(r.nextRenewal(m.TTL, dl.Until())))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		due := time.Now()
		renewed := make(chan renewal, 1)
		go func() { renewed <- r.renewOnce(ctx, m, dl, due) }()
		checkErr := r.check(ctx, m, due.Add(r.nextRenewal(m.TTL, dl.Until())))
		rn := <-renewed
		nm, err := rn.m, rn.err
		if ctx.Err() != nil { // stopped: the runner leaves or lost the membership
			return
		}
		if errors.Is(checkErr, tenure.ErrLost) || errors.Is(checkErr, tenure.ErrRefused) {
			err = checkErr
		}
		next := retry
		switch {
		case err == nil && checkErr == nil:
			m, dl, base = nm, r.deadlineOf(nm), nm
			shared.Extend(nm.TTL, nm.Sent, dl)
			next = r.nextRenewal(nm.TTL, dl.Until())
		case err == nil:
			m = nm
			r.g.log.Warn("membership renewed, but the partitions owned could not be checked: their terms are not extended; retrying until the local deadline", "err", checkErr, "remaining", dl.Until())
		case errors.Is(err, tenure.ErrLost) || errors.Is(err, tenure.ErrRefused):
			// Lost, or refused for good (Run returns the refusal): renewing
			// again cannot keep the terms.
			r.lose(shared, err)
			return
		default:
			r.g.log.Warn("membership renewal failed; retrying until the local deadline", "err", err, "remaining", dl.Until())
		}
		if !(err == nil && checkErr == nil) {
			// The same deadline again: its timer, set before this round,
			// sleeps on Go's clock, which a host suspend during the round
			// stopped; set again now, it ends the terms on time.
			shared.Extend(base.TTL, base.Sent, dl)
		}
		r.mu.Lock()
		r.member, r.deadline = m, dl
		r.mu.Unlock()
		timer.Reset(timerwait.Delay(next - time.Since(rn.replied))) // from the reply, check or no check
	}
}

// renewal is the outcome of one membership renewal.
type renewal struct {
	m       Member
	err     error
	replied time.Time
}

// renewOnce sends one renewal of membership m, due at due, whose terms'
// local deadline is dl, bounded by the request timeout. A renewal still
// unanswered a RetryPeriod after it was due is logged as overdue then.
func (r *runner) renewOnce(ctx context.Context, m Member, dl tenure.Instant, due time.Time) renewal {
	watch := r.watchRenewal(m.Epoch, dl, due)
	defer watch.Stop()
	ctx, cancel := context.WithTimeout(ctx, timing.RequestTimeout(r.cfg.TTL, r.cfg.RenewInterval, r.cfg.RequestTimeout))
	defer cancel()
	nm, err := r.g.c.RenewMember(ctx, m)
	return renewal{m: nm, err: err, replied: time.Now()}
}

// check asks the coordinator which of the partitions this member runs it
// no longer owns, bounded by the request timeout and by next (when the
// next renewal is due), and ends their terms as lost: they are not released
// (see finish), and the member claims them again only if its assignment
// gives them to it, with a new token.
func (r *runner) check(ctx context.Context, m Member, next time.Time) error {
	r.mu.Lock()
	gs := make([]tenure.Grant, 0, len(r.live))
	for _, l := range r.live {
		gs = append(gs, l.grant)
	}
	r.mu.Unlock()
	if len(gs) == 0 {
		return nil
	}
	timeout := timing.RequestTimeout(r.cfg.TTL, r.cfg.RenewInterval, r.cfg.RequestTimeout)
	ctx, cancel := context.WithTimeout(ctx, timerwait.Delay(min(timeout, time.Until(next))))
	defer cancel()
	lost, err := r.g.c.CheckPartitions(ctx, m, gs)
	if err != nil {
		return fmt.Errorf("check the partitions owned: %w", err)
	}
	for _, g := range lost {
		name, _ := strings.CutPrefix(g.Key, r.cfg.Key+"/")
		r.mu.Lock()
		l, ok := r.live[name]
		ok = ok && l.grant.Token == g.Token
		if ok {
			delete(r.live, name)
		}
		r.mu.Unlock()
		if !ok {
			continue
		}
		r.g.log.Error("partition no longer owned: freed or taken by someone else; its term ends now", "partition", name, "token", g.Token)
		l.ctl.End(fmt.Errorf("%w: %w: partition %q (token %d) was freed or taken by someone else", tenure.ErrNotLeader, tenure.ErrLost, name, g.Token))
	}
	return nil
}

// lose ends every term at once after the coordinator reported the
// membership gone (err wraps ErrLost) or refused its renewal for good
// (ErrRefused), and tells the runner (see renewerEnded).
func (r *runner) lose(shared sharedDeadline, err error) {
	r.mu.Lock()
	r.ended = err
	terms := slices.Collect(maps.Values(r.live))
	clear(r.live)
	r.mu.Unlock()
	for _, l := range terms {
		l.ctl.End(fmt.Errorf("%w: %w", tenure.ErrNotLeader, err))
	}
	shared.Stop()
	r.poke()
}

// renewerEnded returns why the renewer stopped, once: the membership lost,
// or nil while it runs.
func (r *runner) renewerEnded() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.ended
	r.ended = nil
	return err
}

// lost ends every term after the coordinator reported the membership gone,
// and stops renewing it. The partitions are free already: nothing is
// released.
func (r *runner) lost(err error) {
	r.stopRenew()
	m, _ := r.lease()
	r.g.log.Warn("membership lost", "epoch", m.Epoch, "err", err)
	for _, o := range r.owned {
		o.keep = true
		if o.reason == "" {
			o.reason = MoveLost
		}
		o.ctl.End(fmt.Errorf("%w: %w", tenure.ErrNotLeader, err))
	}
	r.mu.Lock()
	clear(r.live)
	r.ended = nil // the renewer's news of the same loss, if any
	r.mu.Unlock()
	clear(r.unsent)
	clear(r.doubtful) // gone with the membership
	r.shared.Stop()
	r.joined = false
}

// poke wakes the runner's loop for a step.
func (r *runner) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}
