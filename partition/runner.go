package partition

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/lease"
	"github.com/tenure-dev/tenure/internal/timerwait"
)

// owned is one partition this member owns, from its claim until its
// function has returned.
type owned struct {
	p      Partition
	term   *tenure.Term
	ctl    tenure.TermControl
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
	shared    *tenure.SharedDeadline // every owned partition's: the membership's deadline
	stopRenew func()                 // stops the membership's renewer and waits for it

	// The membership, as the renewer keeps it (see renewLoop), which runs
	// on its own schedule, beside the steps.
	mu       sync.Mutex
	member   tenure.Member
	deadline tenure.Instant      // the member's local deadline, on both clocks
	live     map[string]liveTerm // partitions run and not found lost: what a check asks about
	ended    error               // why the renewer stopped: the membership lost, or a coordinator's bug

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
		live:     make(map[string]liveTerm),
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
		if more { // partitions left to claim: go on at once
			wait = 0
		}
		timer.Reset(timerwait.Delay(wait))
	}
}

// step does one round: join (or learn that the renewer lost the
// membership), read the membership, collect finished functions, hand over,
// release, claim. It returns only permanent errors, and reports whether
// partitions are left to claim. Renewals do not wait for it: they run on
// their own schedule (see renewLoop).
func (r *runner) step() (more bool, err error) {
	if err := r.renewerEnded(); err != nil {
		return false, err
	}
	if !r.joined {
		if err := r.join(); err != nil {
			return false, err
		}
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
	return r.callCtx(r.ctx, f)
}

// callCtx runs f with a context from parent bounded by the request timeout.
func (r *runner) callCtx(parent context.Context, f func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(parent, r.cfg.EffectiveRequestTimeout())
	defer cancel()
	return f(ctx)
}

// lease returns the membership and its local deadline, as last renewed.
func (r *runner) lease() (tenure.Member, tenure.Instant) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.member, r.deadline
}

// permanent reports whether err is one that retrying cannot cure.
func permanent(err error) bool {
	return errors.Is(err, tenure.ErrInvalidKey) || errors.Is(err, tenure.ErrInvalidHolder) ||
		errors.Is(err, tenure.ErrInvalidTTL) || errors.Is(err, tenure.ErrClosed)
}

// join makes this process a member with a new epoch, and starts renewing
// the membership.
func (r *runner) join() error {
	var m tenure.Member
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
	dl, err := r.deadlineOf(m)
	if err != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), r.cfg.EffectiveRequestTimeout())
		if lerr := r.g.c.LeaveGroup(ctx, m); lerr != nil {
			r.g.log.Warn("leave failed; the membership will expire on its own", "err", lerr)
		}
		cancel()
		return fmt.Errorf("partition: join %q: %w", r.cfg.Key, err)
	}
	r.mu.Lock()
	r.member, r.deadline, r.ended = m, dl, nil
	r.mu.Unlock()
	r.joined = true
	r.shared = tenure.NewSharedDeadline(dl)
	ctx, cancel := context.WithCancel(r.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.renewLoop(ctx, r.shared, time.Now().Add(r.nextRenewal(m.TTL, dl)))
	}()
	r.stopRenew = func() { cancel(); <-done }
	r.g.log.Info("joined", "epoch", m.Epoch, "ttl", m.TTL)
	return nil
}

// deadlineOf is the local deadline a membership m gives every partition it
// owns (see lease.Deadline): an error for a membership that does not say
// when its lease started, which has no safe deadline.
func (r *runner) deadlineOf(m tenure.Member) (tenure.Instant, error) {
	dl, err := lease.Deadline(m.Sent, m.TTL, r.cfg.MaxDrift, r.cfg.Margin)
	if err != nil {
		return dl, fmt.Errorf("coordinator %T reported membership epoch %d without Member.Sent: %w", r.g.c, m.Epoch, err)
	}
	return dl, nil
}

// nextRenewal is how long after a renewal of a membership granted for ttl,
// with its local deadline at dl, the next one is due (see
// lease.NextRenewal, the Elector's rule).
func (r *runner) nextRenewal(ttl time.Duration, dl tenure.Instant) time.Duration {
	return lease.NextRenewal(r.cfg.EffectiveRenewInterval(), ttl, dl.Until())
}

// renewInterval is how often the membership is renewed while renewals
// succeed: the schedule of a renewal answered at once.
func (r *runner) renewInterval() time.Duration {
	m, _ := r.lease()
	ttl := cmp.Or(m.TTL, r.cfg.TTL)
	return lease.NextRenewal(r.cfg.EffectiveRenewInterval(), ttl, lease.Safe(ttl, r.cfg.MaxDrift, r.cfg.Margin))
}

// liveTerm is a partition this member runs, as a check sees it.
type liveTerm struct {
	grant tenure.Grant
	ctl   tenure.TermControl
}

// renewLoop renews the membership, first at due, until ctx ends or the
// membership is lost. It runs in a goroutine of its own, so that renewals
// never wait behind the steps' claims, reads of the membership or of the
// partition table, or the time a step takes.
func (r *runner) renewLoop(ctx context.Context, shared *tenure.SharedDeadline, due time.Time) {
	timer := time.NewTimer(timerwait.Delay(time.Until(due)))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		next, ok := r.renew(ctx, shared, due)
		if !ok {
			return
		}
		due = next
		timer.Reset(timerwait.Delay(time.Until(due)))
	}
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
// It returns when the next renewal is due, or false once the membership is
// lost (or ctx ended).
func (r *runner) renew(ctx context.Context, shared *tenure.SharedDeadline, due time.Time) (next time.Time, ok bool) {
	r.mu.Lock()
	m, dl := r.member, r.deadline
	gs := make([]tenure.Grant, 0, len(r.live))
	for _, l := range r.live {
		gs = append(gs, l.grant)
	}
	r.mu.Unlock()
	first := "check of the partitions owned"
	if len(gs) == 0 {
		first = "membership renewal" // check sends nothing
	}
	watch := r.watchRenewal(m.Epoch, dl, due, first)
	defer watch.stop()
	checkErr := r.check(ctx, m, gs)
	if errors.Is(checkErr, tenure.ErrLost) {
		r.lose(shared, checkErr)
		return time.Time{}, false
	}
	watch.sending("membership renewal")
	var nm tenure.Member
	err := r.callCtx(ctx, func(ctx context.Context) (err error) {
		nm, err = r.g.c.RenewMember(ctx, m)
		return err
	})
	if ctx.Err() != nil { // stopped: the runner leaves or lost the membership
		return time.Time{}, false
	}
	var ndl tenure.Instant
	if err == nil {
		if ndl, err = r.deadlineOf(nm); err != nil {
			r.lose(shared, err)
			return time.Time{}, false
		}
	}
	retry := time.Now().Add(r.cfg.EffectiveRetryPeriod())
	switch {
	case err == nil && checkErr == nil:
		r.mu.Lock()
		r.member, r.deadline = nm, ndl
		r.mu.Unlock()
		shared.Extend(nm.TTL, nm.Sent, ndl)
		return time.Now().Add(r.nextRenewal(nm.TTL, ndl)), true
	case err == nil:
		r.mu.Lock()
		r.member = nm
		r.mu.Unlock()
		r.g.log.Warn("membership renewed, but the partitions owned could not be checked: their terms are not extended; retrying until the local deadline", "err", checkErr, "remaining", dl.Until())
		return retry, true
	case errors.Is(err, tenure.ErrLost):
		r.lose(shared, err)
		return time.Time{}, false
	default:
		r.g.log.Warn("membership renewal failed; retrying until the local deadline", "err", err, "remaining", dl.Until())
		return retry, true
	}
}

// check asks the coordinator which of gs, the partitions this member runs,
// it no longer owns, and ends their terms as lost (see finish): they are
// not released, and the member claims them again only if its assignment
// gives them to it, with a new token.
func (r *runner) check(ctx context.Context, m tenure.Member, gs []tenure.Grant) error {
	if len(gs) == 0 {
		return nil
	}
	var lost []tenure.Grant
	err := r.callCtx(ctx, func(ctx context.Context) (err error) {
		lost, err = r.g.c.CheckPartitions(ctx, m, gs)
		return err
	})
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

// lose ends every term after the renewer found the membership gone (err
// wraps ErrLost) or unusable, and tells the runner (see renewerEnded).
func (r *runner) lose(shared *tenure.SharedDeadline, err error) {
	r.mu.Lock()
	r.ended = err
	terms := slices.Collect(maps.Values(r.live))
	clear(r.live)
	r.mu.Unlock()
	for _, l := range terms {
		l.ctl.End(fmt.Errorf("%w: %w", tenure.ErrNotLeader, err))
	}
	shared.Stop()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// renewerEnded acts on the end of the renewer: a membership lost, after
// which the member joins again, or a coordinator's bug, which it returns.
func (r *runner) renewerEnded() error {
	r.mu.Lock()
	err := r.ended
	r.ended = nil
	r.mu.Unlock()
	if err == nil || !r.joined {
		return nil
	}
	if errors.Is(err, tenure.ErrLost) {
		r.lost(err)
		return nil
	}
	return fmt.Errorf("partition: group %q: %w", r.cfg.Key, err) // Run leaves the group
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
	r.mu.Unlock()
	clear(r.unsent)
	clear(r.doubtful) // gone with the membership
	r.shared.Stop()
	r.joined = false
}
