package partition

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tenure-dev/tenure/internal/timing"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/timerwait"
)

// owned is one partition this member owns, from its claim until its
// function has returned.
type owned struct {
	p      Partition
	term   *tenure.Term
	ctl    termControl
	stop   context.CancelCauseFunc // cancels the function's ctx
	err    error                   // the function's result, once on runner.returned
	reason MoveReason              // why it is being given up; "" while wanted
	keep   bool                    // do not release: the membership is gone
}

// runner is one Run of a Group.
type runner struct {
	g    *Group
	cfg  Config
	fn   Func
	ctx  context.Context
	wake chan struct{} // poked when a function returns

	joined    bool
	member    Member
	deadline  tenure.Instant // the member's local deadline, on both clocks
	shared    sharedDeadline // every owned partition's: deadline
	nextRenew time.Time

	latest, effective []string          // member IDs: as last read; debounced
	changedAt         time.Time         // when latest last changed
	settledAt         time.Time         // when effective last settled
	target, settled   map[string]string // Rebalance over latest, effective
	mine              []string          // names target gives this member
	nextRead          time.Time         // when to read the table again
	lastRead          time.Time         // when it was last read
	readFails         int               // reads failed in a row
	heldSince         time.Time         // first claim refused since the last read
	watch             <-chan struct{}   // membership changes; nil: poll only
	nextWatch         time.Time         // when to try watching again

	disagree  map[string]uint64 // members that announced another P: ID → epoch logged
	doubtful  map[string]bool   // claimed with an outcome unknown: claim again (see claim)
	batch     claimBatch        // how many to claim in a step
	owned     map[string]*owned
	unsent    map[string]tenure.Grant // to release; retried until it succeeds
	cooldown  map[string]time.Time    // not claimed again before
	unowned   map[string]time.Time    // first seen unowned, for Stats
	nextStats time.Time

	// A step costs nothing per partition owned unless something changed:
	retarget     bool       // the target changed since handOver last looked
	ownedChanged bool       // owned changed since publish last listed it
	nextPublish  time.Time  // when publish lists it anyway (terms end by themselves)
	returnedMu   sync.Mutex // guards returned
	returned     []*owned   // functions returned, not reaped yet
}

func newRunner(ctx context.Context, g *Group, fn Func) *runner {
	return &runner{
		g: g, cfg: g.cfg, fn: fn, ctx: ctx,
		wake:     make(chan struct{}, 1),
		owned:    make(map[string]*owned),
		unsent:   make(map[string]tenure.Grant),
		cooldown: make(map[string]time.Time),
		unowned:  make(map[string]time.Time),
		disagree: make(map[string]uint64),
		doubtful: make(map[string]bool),
	}
}

func (r *runner) run() error {
	timer := time.NewTimer(timerwait.Delay(0))
	defer timer.Stop()
	wctx, stopWatch := context.WithCancel(r.ctx)
	defer stopWatch()
	for {
		select {
		case <-r.ctx.Done():
			r.leave()
			return r.ctx.Err()
		case <-timer.C:
		case <-r.wake:
		case _, ok := <-r.watch:
			if !ok {
				r.watch = nil
			}
		}
		r.watchMembers(wctx)
		more, err := r.step()
		if err != nil {
			r.leave()
			return err
		}
		wait := r.cfg.EffectiveSyncInterval()
		switch {
		case more: // partitions left to claim: go on at once
			wait = 0
		case r.joined:
			wait = max(min(wait, time.Until(r.nextRenew)), time.Millisecond)
		}
		timer.Reset(timerwait.Delay(wait))
	}
}

// step does one round: join or renew, read the membership, collect
// finished functions, hand over, release, claim. It returns only permanent
// errors, and reports whether partitions are left to claim.
func (r *runner) step() (more bool, err error) {
	if !r.joined {
		if err := r.join(); err != nil {
			return false, err
		}
	}
	if r.joined && !time.Now().Before(r.nextRenew) {
		r.renew()
	}
	if r.joined {
		if err := r.readMembers(); err != nil {
			return false, err
		}
	}
	r.reap()
	r.handOver()
	r.release()
	if r.joined {
		more = r.claim()
	}
	r.publish()
	r.stats()
	return more, nil
}

// call runs f with a context bounded by the request timeout.
func (r *runner) call(f func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(r.ctx, timing.RequestTimeout(r.cfg.TTL, r.cfg.RenewInterval, r.cfg.RequestTimeout))
	defer cancel()
	return f(ctx)
}

// permanent reports whether err is one that retrying cannot cure.
func permanent(err error) bool {
	return errors.Is(err, tenure.ErrInvalidKey) || errors.Is(err, tenure.ErrInvalidHolder) ||
		errors.Is(err, tenure.ErrInvalidTTL) || errors.Is(err, tenure.ErrClosed)
}

// join makes this process a member with a new epoch.
func (r *runner) join() error {
	var m Member
	err := r.call(func(ctx context.Context) (err error) {
		m, err = r.g.c.JoinGroup(ctx, r.cfg.Key, r.g.id, r.cfg.TTL, r.cfg.Partitions)
		return err
	})
	switch {
	case err == nil:
	case permanent(err) || errors.Is(err, tenure.ErrInvalidConfig):
		return fmt.Errorf("partition: join %q: %w", r.cfg.Key, err)
	default:
		r.g.log.Warn("join failed; retrying", "err", err)
		return nil
	}
	r.member, r.joined = m, true
	r.deadline = r.deadlineOf(m)
	r.shared = newSharedDeadline(r.deadline)
	r.nextRenew = m.Sent.Time().Add(r.renewInterval())
	r.g.log.Info("joined", "epoch", m.Epoch, "ttl", m.TTL)
	return nil
}

// deadlineOf is the local deadline a membership m gives every partition it
// owns: the send of the request that last started or extended its lease,
// plus the safe lease of its TTL, on both clocks (a host suspend between
// that send and the reply counts against it). A membership that does not
// say when its lease started has no safe deadline: none at all.
func (r *runner) deadlineOf(m Member) tenure.Instant {
	if m.Sent.IsZero() {
		r.g.log.Error("coordinator reported a membership without Member.Sent: its lease's age is unknown; acting on none of it", "coordinator", fmt.Sprintf("%T", r.g.c))
		return tenure.Now()
	}
	return m.Sent.Add(timing.SafeLease(m.TTL, r.cfg.MaxDrift, r.cfg.Margin))
}

// renewInterval is how often the membership is renewed: the configured
// interval, but at least three times per safe lease of the TTL granted.
func (r *runner) renewInterval() time.Duration {
	return max(min(timing.RenewInterval(r.cfg.TTL, r.cfg.RenewInterval), timing.SafeLease(r.member.TTL, r.cfg.MaxDrift, r.cfg.Margin)/3), time.Millisecond)
}

// renew checks that this member still owns every partition it runs (see
// check), then extends the membership, and with it their terms: the terms
// are extended only when both answered. So a partition freed by someone
// else (an operator's `tenure release --force`, etcdctl del, an UPDATE)
// and perhaps claimed by another member since is run here at most until
// the reply of the next check, one renewal interval plus a round trip
// later, and never past the deadline of the last renewal that followed a
// check: a safe lease. A check that fails does not keep the membership from
// being renewed (its other partitions, and its place in the group, live on);
// both are tried again after RetryPeriod. A renewal still unanswered a
// RetryPeriod after it was due is logged as overdue then (see overdue).
func (r *runner) renew() {
	first := "check of the partitions owned"
	if len(r.owned) == 0 {
		first = "membership renewal" // check sends nothing
	}
	watch := r.watchRenewal(r.nextRenew, first)
	defer watch.stop()
	checkErr := r.check()
	if errors.Is(checkErr, tenure.ErrLost) {
		r.lost(checkErr)
		return
	}
	watch.sending("membership renewal")
	var m Member
	err := r.call(func(ctx context.Context) (err error) {
		m, err = r.g.c.RenewMember(ctx, r.member)
		return err
	})
	switch {
	case err == nil && checkErr == nil:
		r.member = m
		r.deadline = r.deadlineOf(m)
		r.nextRenew = m.Sent.Time().Add(r.renewInterval())
		r.shared.Extend(m.TTL, m.Sent, r.deadline)
	case err == nil:
		r.member = m
		r.g.log.Warn("membership renewed, but the partitions owned could not be checked: their terms are not extended; retrying until the local deadline", "err", checkErr, "remaining", r.deadline.Until())
		r.nextRenew = time.Now().Add(timing.RetryPeriod(r.cfg.TTL, r.cfg.RetryPeriod))
	case errors.Is(err, tenure.ErrLost):
		r.lost(err)
	default:
		r.g.log.Warn("membership renewal failed; retrying until the local deadline", "err", err, "remaining", r.deadline.Until())
		r.nextRenew = time.Now().Add(timing.RetryPeriod(r.cfg.TTL, r.cfg.RetryPeriod))
	}
}

// check asks the coordinator which of the partitions this member runs it no
// longer owns, and ends their terms as lost: they are not released, and the
// member claims them again only if its assignment gives them to it, with a
// new token.
func (r *runner) check() error {
	if len(r.owned) == 0 {
		return nil
	}
	gs := make([]tenure.Grant, 0, len(r.owned))
	for _, o := range r.owned {
		if !o.keep {
			gs = append(gs, o.term.Grant())
		}
	}
	var lost []tenure.Grant
	err := r.call(func(ctx context.Context) (err error) {
		lost, err = r.g.c.CheckPartitions(ctx, r.member, gs)
		return err
	})
	if err != nil {
		return fmt.Errorf("check the partitions owned: %w", err)
	}
	for _, g := range lost {
		name, _ := strings.CutPrefix(g.Key, r.cfg.Key+"/")
		o := r.owned[name]
		if o == nil || o.keep {
			continue
		}
		r.g.log.Error("partition no longer owned: freed or taken by someone else; its term ends now", "partition", name, "token", g.Token)
		o.keep = true
		if o.reason == "" {
			o.reason = MoveLost
		}
		o.ctl.End(fmt.Errorf("%w: %w: partition %q (token %d) was freed or taken by someone else", tenure.ErrNotLeader, tenure.ErrLost, name, g.Token))
	}
	return nil
}

// lost ends every term after the coordinator reported the membership gone.
// The partitions are free already: nothing is released.
func (r *runner) lost(err error) {
	r.g.log.Warn("membership lost", "epoch", r.member.Epoch, "err", err)
	for _, o := range r.owned {
		o.keep = true
		if o.reason == "" {
			o.reason = MoveLost
		}
		o.ctl.End(fmt.Errorf("%w: %w", tenure.ErrNotLeader, err))
	}
	clear(r.unsent)
	clear(r.doubtful) // gone with the membership
	r.shared.Stop()
	r.joined = false
}
