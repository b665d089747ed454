package partition

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tenure-dev/tenure/internal/outage"
	"github.com/tenure-dev/tenure/internal/timing"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/timerwait"
)

// owned is one partition this member owns, from its claim until its
// function has returned.
type owned struct {
	p      Partition
	term   *tenure.Term
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
	ml        *tenure.Lease // the membership's lease, which every owned partition's term rides
	stopRenew func()        // stops the membership's renewer and waits for it

	// The membership as its renewer keeps it (see renew), which runs on
	// its own schedule beside the steps.
	mu     sync.Mutex
	member Member
	live   map[string]liveTerm // partitions run and not found lost: what a check asks about
	ended  error               // the membership lost, found by the renewer

	latest, effective []string          // member IDs: as last read; debounced
	changedAt         time.Time         // when latest last changed
	settledAt         time.Time         // when effective last settled
	target, settled   map[string]string // Rebalance over latest, effective
	mine              []string          // names target gives this member
	nextRead          time.Time         // when to read the table again
	lastRead          time.Time         // when it was last read
	readFails         int               // reads failed in a row
	// An outage is logged once, then summed up (outage.Log): the join,
	// the members' read and the partition table's read, each retried.
	joinDown, membersDown, tableDown outage.Log
	strangerLog                      outage.Log              // partitions held by strangers: see reportStrangers
	strangers                        map[string]stranger     // by partition name
	heldSince                        time.Time               // first claim refused since the last read
	listed                           map[string]tenure.Grant // this member's grants, as last read; see freeOrphans
	watch                            <-chan struct{}         // membership changes; nil: poll only
	nextWatch                        time.Time               // when to try watching again

	refused   error             // the first call the coordinator refused for good: Run returns it
	twinned   bool              // another membership of this member's ID is listed (see heldBy)
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

		joinDown:    outage.Log{Msg: "join failed; retrying"},
		membersDown: outage.Log{Msg: "reading members failed"},
		tableDown:   outage.Log{Msg: "reading the partition table failed"},
		strangerLog: outage.Log{Msg: strangerMsg},
		strangers:   make(map[string]stranger),
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

// step does one round: join (or learn that the renewer found the
// membership lost), read the membership, queue orphans for release (see
// freeOrphans), collect finished functions, hand over, release, claim. It
// returns only permanent errors, and reports whether partitions are left
// to claim. Renewals never wait for it: they run on their own schedule
// (see renew).
func (r *runner) step() (more bool, err error) {
	if err := r.renewerEnded(); err != nil {
		r.lost(err) // joins again at the next step, unless refused
		if errors.Is(err, tenure.ErrRefused) {
			return false, fmt.Errorf("partition: group %q: %w", r.cfg.Key, err)
		}
	} else if !r.joined {
		if err := r.join(); err != nil {
			return false, err
		}
	}
	if r.joined {
		if err := r.readMembers(); err != nil {
			return false, err
		}
	}
	r.freeOrphans()
	r.reap()
	r.handOver()
	r.release()
	if r.joined {
		more = r.claim()
	}
	r.reportStrangers(time.Now())
	r.publish()
	r.stats()
	return more, r.refused
}

// call runs f with a context bounded by the request timeout. An error the
// coordinator refused for good (see refuse) ends Run after this step.
func (r *runner) call(f func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(r.ctx, timing.RequestTimeout(r.cfg.TTL, r.cfg.RenewInterval, r.cfg.RequestTimeout))
	defer cancel()
	err := f(ctx)
	r.refuse(err)
	return err
}

// refuse records err, when it matches tenure.ErrRefused and is the first
// such, as the error Run returns at the end of the step: waiting does not
// grant a permission, so retrying the call would only repeat the refusal.
func (r *runner) refuse(err error) {
	if r.refused == nil && errors.Is(err, tenure.ErrRefused) {
		r.refused = fmt.Errorf("partition: group %q: %w", r.cfg.Key, err)
	}
}

// permanent reports whether err is one that retrying cannot cure.
func permanent(err error) bool {
	return errors.Is(err, tenure.ErrInvalidKey) || errors.Is(err, tenure.ErrInvalidHolder) ||
		errors.Is(err, tenure.ErrInvalidTTL) || errors.Is(err, tenure.ErrClosed) || errors.Is(err, tenure.ErrRefused)
}

// join makes this process a member with a new epoch, and starts renewing
// the membership.
func (r *runner) join() error {
	var m Member
	err := r.call(func(ctx context.Context) (err error) {
		m, err = r.g.c.JoinGroup(ctx, r.cfg.Key, r.g.id, r.cfg.TTL, r.cfg.Partitions)
		return err
	})
	switch {
	case err == nil:
		r.joinDown.Succeeded(r.g.log)
	case permanent(err) || errors.Is(err, tenure.ErrInvalidConfig):
		return fmt.Errorf("partition: join %q: %w", r.cfg.Key, err)
	default:
		r.joinDown.Failed(r.g.log, err)
		return nil
	}
	cfg := r.cfg.Config
	cfg.Logger = r.g.log.With("epoch", m.Epoch)
	ml, err := tenure.NewLease(cfg, m.TTL, m.Sent)
	if err != nil {
		r.call(func(ctx context.Context) error { return r.g.c.LeaveGroup(ctx, m) })
		return fmt.Errorf("partition: join %q: coordinator %T returned a membership with %w", r.cfg.Key, r.g.c, err)
	}
	r.mu.Lock()
	r.member, r.ended = m, nil
	r.mu.Unlock()
	r.joined = true
	r.ml = ml
	r.startRenewer(ml)
	r.g.log.Info("joined", "epoch", m.Epoch, "ttl", m.TTL)
	return nil
}

// renewInterval is how often the membership is renewed while renewals are
// answered at once: the lease's schedule (see tenure.Lease.Keep) for the
// TTL granted and a full safe lease left.
func (r *runner) renewInterval() time.Duration {
	m, _ := r.lease()
	ttl := m.TTL
	if ttl <= 0 { // not joined yet
		ttl = r.cfg.TTL
	}
	return timing.NextRenewal(timing.RenewInterval(r.cfg.TTL, r.cfg.RenewInterval), ttl, timing.SafeLease(ttl, r.cfg.MaxDrift, r.cfg.Margin))
}

// lease returns the membership and its terms' local deadline, as last
// renewed.
func (r *runner) lease() (Member, tenure.Instant) {
	r.mu.Lock()
	m := r.member
	r.mu.Unlock()
	if r.ml == nil { // not joined yet
		return m, tenure.Instant{}
	}
	return m, r.ml.Deadline()
}
