package tenure

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/tenure-dev/tenure/internal/timerwait"
)

// A SharedDeadline is the one local deadline of many terms that one lease
// keeps: package partition starts every partition of a group member under
// its membership's, which one renewal extends for all of them. One timer
// ends them all when it passes, where a timer per term would wake each term
// every second (suspendCheck) to watch for a host suspend: with 100,000
// partitions, 100,000 wake-ups a second. Check and Remaining of each term
// still judge the deadline themselves, on both clocks. Like TermControl, it
// is for the owner of the lease, not for user code. It is exported for
// package partition; user code does not call it.
type SharedDeadline struct {
	mu      sync.Mutex
	dl      Instant
	terms   map[*Term]struct{}
	timer   *time.Timer
	stopped bool
}

// NewSharedDeadline returns a shared deadline at dl, watched by one timer
// until Stop. It is exported for package partition, which makes one for
// each membership of a member; user code does not call it.
func NewSharedDeadline(dl Instant) *SharedDeadline {
	d := &SharedDeadline{dl: dl, terms: make(map[*Term]struct{})}
	d.mu.Lock() // expire, which locks, may run before d.timer is set
	d.timer = time.AfterFunc(d.sleepLocked(), d.expire)
	d.mu.Unlock()
	return d
}

// Start starts a term for grant g under d: as a term of its own with d's deadline,
// which Extend moves. The term's TermControl ends it alone, or moves its
// deadline alone; it leaves d when it ends. Past the deadline or after
// Stop, Start returns a term already ended.
func (d *SharedDeadline) Start(parent context.Context, g Grant) (*Term, TermControl) {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(parent))
	d.mu.Lock()
	t := &Term{
		key: g.Key, holder: g.Holder, token: g.Token,
		ctx: ctx, cancel: cancel, shared: d,
		ttl: g.TTL, sent: g.Sent, deadline: d.dl.mono, bootDeadline: d.dl.boot,
	}
	stopped := d.stopped || past(d.dl.mono, d.dl.boot) >= 0
	if !stopped {
		d.terms[t] = struct{}{}
	}
	d.mu.Unlock()
	if stopped {
		t.end(fmt.Errorf("%w: term %d on %q started past its deadline, or after it stopped", ErrNotLeader, t.token, t.key))
	}
	return t, TermControl{t}
}

// Extend moves the deadline to dl, the one renewal that produced ttl and
// sent, for every live term of d (see TermControl.Extend). A term whose
// deadline has already passed is not revived: it is ended now.
func (d *SharedDeadline) Extend(ttl time.Duration, sent, dl Instant) {
	d.mu.Lock()
	d.dl = dl
	terms := d.snapshotLocked()
	d.timer.Reset(d.sleepLocked())
	d.mu.Unlock()
	for _, t := range terms {
		if !t.extend(Grant{TTL: ttl, Sent: sent}, dl) {
			t.end(fmt.Errorf("%w: term %d on %q reached its local deadline", ErrNotLeader, t.token, t.key))
		}
	}
}

// Stop stops d's timer. The terms still live are not ended: their owner
// ends them (Check fails once their deadline has passed, whatever).
func (d *SharedDeadline) Stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopped = true
	d.timer.Stop()
}

// sleepLocked is how long the timer should sleep: until the deadline, at
// most suspendCheck at a time.
func (d *SharedDeadline) sleepLocked() time.Duration {
	return timerwait.Delay(min(-past(d.dl.mono, d.dl.boot), suspendCheck))
}

// snapshotLocked lists d's live terms.
func (d *SharedDeadline) snapshotLocked() []*Term {
	out := make([]*Term, 0, len(d.terms))
	for t := range d.terms {
		out = append(out, t)
	}
	return out
}

// expire runs when the timer fires: it ends every term once the deadline
// has passed, and sleeps again otherwise.
func (d *SharedDeadline) expire() {
	d.mu.Lock()
	if d.stopped {
		d.mu.Unlock()
		return
	}
	if past(d.dl.mono, d.dl.boot) < 0 {
		d.timer.Reset(d.sleepLocked())
		d.mu.Unlock()
		return
	}
	terms := d.snapshotLocked()
	d.mu.Unlock()
	for _, t := range terms {
		t.end(fmt.Errorf("%w: term %d on %q reached its local deadline", ErrNotLeader, t.token, t.key))
	}
}

// forget removes t, which has ended.
func (d *SharedDeadline) forget(t *Term) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.terms, t)
}
