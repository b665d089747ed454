package tenure

import (
	"context"
	"log/slog"
	"time"

	"github.com/tenure-dev/tenure/internal/boottime"
)

// SimulateSuspend makes the boot clock follow a synctest bubble's virtual
// time until restore is called, and returns a function that moves it
// forward alone, as a host suspend moves CLOCK_BOOTTIME but not
// CLOCK_MONOTONIC (boottime.NewSuspendable). Every reader of the boot clock
// in the process sees it (coordinators too, which read it for Grant.Sent).
func SimulateSuspend() (suspend func(d time.Duration), restore func()) {
	c, suspend := boottime.NewSuspendable()
	return suspend, boottime.Simulate(c)
}

// StartTerm starts a term for g on a lease of its own whose local deadline
// is deadline, for the adversarial term tests, with the owner's side of it.
func StartTerm(parent context.Context, g Grant, deadline Instant) (*Term, TermControl) {
	t := newTerm(parent, g, deadline)
	return t, TermControl{t}
}

// TermControl is the owner's side of a term StartTerm made.
type TermControl struct{ t *Term }

// Extend extends the term's lease: see Lease.extend.
func (c TermControl) Extend(g Grant, deadline Instant) bool { return c.t.lease.extend(g, deadline) }

// End ends the term: see Lease.End.
func (c TermControl) End(cause error) { c.t.lease.End(c.t, cause) }

// newTerm starts a term for g on a lease of its own whose local deadline
// is dl (the lease's timing is Config's defaults for g.TTL; only renewals,
// which this package's tests do not start, read it). The term's context is
// cancelled at the deadline unless the lease is extended.
func newTerm(parent context.Context, g Grant, dl Instant) *Term {
	l := newLeaseAt(newLeaseTiming(g.TTL, 0, 0, 0, 0, 0), g.TTL, dl, true, nil, "renewal")
	t := l.Start(parent, g)
	return t
}

// newLeaseAt is newLease with its deadline given: a lease granted for no
// time by a request sent at dl (its deadline is dl), then given tm and
// ttl, which only renewals read.
func newLeaseAt(tm leaseTiming, ttl time.Duration, dl Instant, single bool, log *slog.Logger, name string) *Lease {
	l, err := newLease(leaseTiming{}, 0, dl, single, log, name)
	if err != nil {
		panic(err) // a zero dl
	}
	l.mu.Lock()
	l.tm, l.ttl = tm, ttl
	l.mu.Unlock()
	return l
}
