package partition

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tenure-dev/tenure"
)

// liveTerm is a partition this member runs, as a check sees it.
type liveTerm struct {
	grant tenure.Grant
	term  *tenure.Term
}

// startRenewer starts the goroutine that keeps membership m's lease ml (see
// renew); stopRenew stops it and waits for it.
func (r *runner) startRenewer(ml *tenure.Lease) {
	ctx, cancel := context.WithCancel(r.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := ml.Keep(ctx, r.renew); err != nil {
			r.poke() // the runner learns it from renewerEnded
		}
	}()
	r.stopRenew = func() { cancel(); <-done }
}

// renew sends one renewal of the membership for the lease's one renewal
// loop (tenure.Lease.Keep), which runs in a goroutine of its own, so that a
// renewal never waits behind a claim, a release, a read of the membership
// or of the partition table, or the step that makes them.
//
// Each renewal is sent with a check that this member still owns every
// partition it runs (see check), both in flight at once (the renewal from
// a goroutine of its own, so that neither waits for the other's reply), and
// extends the terms only when both answered: so a partition freed by
// someone else (an operator's `tenure release --force`, etcdctl del, an
// UPDATE) and perhaps claimed by another member since is run here at most
// until the reply of the next check, one renewal interval plus a round trip
// later, and never past the deadline of the last renewal sent with a check
// that answered: a safe lease. A check is bounded by next, when the next
// renewal is due, so it never delays it, and a check that fails keeps
// neither the membership from being renewed nor its place in the group.
func (r *runner) renew(ctx context.Context, next time.Time) (tenure.Grant, time.Time, error) {
	m, _ := r.lease()
	renewed := make(chan renewal, 1)
	go func() {
		nm, err := r.g.c.RenewMember(ctx, m)
		renewed <- renewal{m: nm, err: err, replied: time.Now()}
	}()
	checkErr := r.check(ctx, m, next)
	rn := <-renewed
	err := rn.err
	if errors.Is(checkErr, tenure.ErrLost) || errors.Is(checkErr, tenure.ErrRefused) {
		err = checkErr
	}
	switch {
	case errors.Is(err, tenure.ErrLost) || errors.Is(err, tenure.ErrRefused):
		// Lost, or refused for good (Run returns the refusal): the lease
		// ends every term once this returns.
		r.mu.Lock()
		r.ended = err
		clear(r.live)
		r.mu.Unlock()
	case err == nil:
		r.mu.Lock()
		r.member = rn.m // the next renewal sends the membership as renewed
		r.mu.Unlock()
		if checkErr != nil {
			err = fmt.Errorf("membership renewed, but the partitions owned could not be checked: their terms are not extended: %w", checkErr)
		}
	}
	return tenure.Grant{TTL: rn.m.TTL, Sent: rn.m.Sent}, rn.replied, err
}

// renewal is the outcome of one membership renewal.
type renewal struct {
	m       Member
	err     error
	replied time.Time
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
	ctx, cancel := context.WithDeadline(ctx, next)
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
		r.ml.End(l.term, fmt.Errorf("%w: %w: partition %q (token %d) was freed or taken by someone else", tenure.ErrNotLeader, tenure.ErrLost, name, g.Token))
	}
	return nil
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
		r.ml.End(o.term, fmt.Errorf("%w: %w", tenure.ErrNotLeader, err))
	}
	r.mu.Lock()
	clear(r.live)
	r.ended = nil // the renewer's news of the same loss, if any
	r.mu.Unlock()
	clear(r.unsent)
	clear(r.doubtful) // gone with the membership
	r.ml.Stop()
	r.joined = false
}

// poke wakes the runner's loop for a step.
func (r *runner) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}
