package fence

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Stats counts the decisions a Fence or Register has made (Fence.Stats,
// Register.Stats).
type Stats struct {
	// Accepted is the number of tokens admitted.
	Accepted uint64
	// Rejected is the number of tokens rejected: stale or missing.
	Rejected uint64
}

// Event is one decision of a Fence or Register, reported to the observer
// installed with WithObserver.
type Event struct {
	// Seq numbers the decisions of one fence 1, 2, 3, … in the order they
	// were made.
	Seq uint64
	// Token is the token presented.
	Token uint64
	// Accepted reports whether the token was admitted.
	Accepted bool
	// Highest is the highest token accepted once the decision was made: the
	// token itself when accepted, the token required when rejected as stale.
	Highest uint64
	// Value is the value written by an accepted or rejected Register.Write;
	// nil for a Fence.
	Value any
	// At is when the decision was made, with a monotonic clock reading.
	At time.Time
	// Err is the reason for a rejection; nil when accepted.
	Err error
}

// Option configures a Fence (New) or a Register (NewRegister).
type Option func(*options)

type options struct {
	observe func(Event)
}

// WithObserver installs fn to be called with every decision, in decision
// order, synchronously while the fence's lock is held: the sequence fn sees
// is the exact order in which tokens were admitted and rejected, which is
// what a history checker needs. fn must be fast, must not block and must not
// call back into the fence. prom's Metrics.FenceObserver makes an fn that
// counts.
func WithObserver(fn func(Event)) Option {
	return func(o *options) { o.observe = fn }
}

// A Fence records the highest fencing token it has accepted and rejects any
// lower one. It guards a resource of the caller's own: call Admit (or Enter)
// with the caller's token right before acting on the resource. The zero value
// is ready to use; a Fence must not be copied after first use. A Fence is safe
// for concurrent use.
type Fence struct {
	mu      sync.Mutex
	highest uint64
	stats   Stats
	seq     uint64
	observe func(Event)

	// Holders admitted by Enter that have not released yet: all of them hold
	// activeToken.
	active      int
	activeToken uint64
	// idle, when not nil, is closed when active drops to zero.
	idle chan struct{}
}

// New returns a Fence that has accepted no token yet. One Fence guards one
// resource (see the Fence example).
func New(opts ...Option) *Fence {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return &Fence{observe: o.observe}
}

// Admit accepts token if it is at least the highest token accepted so far,
// and records it; the check and the recording are one atomic step. It
// returns a *StaleError (matching tenure.ErrStaleToken) for a lower token
// and an error wrapping ErrMissingToken for token 0. A rejection changes
// nothing but the Rejected count.
//
// Admit does not wait for holders admitted by Enter to release.
func (f *Fence) Admit(token uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.admitLocked(token, nil)
}

// Enter admits token like Admit, and then waits until every holder admitted
// by Enter with an older token has called its release function, so that the
// caller's critical section never overlaps one of an older term's. Holders
// of the same token do not wait for each other.
//
// The token is recorded when Enter is called: from then on, older tokens are
// rejected even while the caller waits. If a newer token is admitted while
// the caller waits, Enter returns a *StaleError (the decision is reported to
// the observer a second time, as a rejection, and counted in Rejected). If
// ctx ends while waiting, Enter returns an error wrapping context.Cause(ctx).
//
// On success the caller must call release exactly once when its critical
// section ends; later calls do nothing.
func (f *Fence) Enter(ctx context.Context, token uint64) (release func(), err error) {
	f.mu.Lock()
	if err := f.admitLocked(token, nil); err != nil {
		f.mu.Unlock()
		return nil, err
	}
	for {
		if token < f.highest {
			err := &StaleError{Presented: token, Required: f.highest}
			f.recordLocked(token, nil, err)
			f.mu.Unlock()
			return nil, err
		}
		if f.active == 0 || f.activeToken == token {
			f.active++
			f.activeToken = token
			f.mu.Unlock()
			var once sync.Once
			return func() { once.Do(f.leave) }, nil
		}
		if f.idle == nil {
			f.idle = make(chan struct{})
		}
		idle, older := f.idle, f.activeToken
		f.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return nil, fmt.Errorf("fence: token %d waiting for token %d to finish: %w", token, older, context.Cause(ctx))
		}
		f.mu.Lock()
	}
}

// Token returns the highest token accepted so far, 0 if none.
func (f *Fence) Token() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.highest
}

// Stats returns the counts of tokens accepted and rejected so far.
func (f *Fence) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

// leave ends one Enter holder's critical section.
func (f *Fence) leave() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.active--
	if f.active == 0 {
		f.activeToken = 0
		if f.idle != nil {
			close(f.idle)
			f.idle = nil
		}
	}
}

// admitLocked decides on token, records the decision and, when accepted,
// raises the highest token. value is reported to the observer.
func (f *Fence) admitLocked(token uint64, value any) error {
	var err error
	switch {
	case token == 0:
		err = fmt.Errorf("%w: token 0 is never granted", ErrMissingToken)
	case token < f.highest:
		err = &StaleError{Presented: token, Required: f.highest}
	default:
		f.highest = token
	}
	f.recordLocked(token, value, err)
	return err
}

// recordLocked counts one decision and reports it to the observer.
func (f *Fence) recordLocked(token uint64, value any, err error) {
	if err == nil {
		f.stats.Accepted++
	} else {
		f.stats.Rejected++
	}
	f.seq++
	if f.observe != nil {
		f.observe(Event{
			Seq: f.seq, Token: token, Accepted: err == nil, Highest: f.highest,
			Value: value, At: time.Now(), Err: err,
		})
	}
}
