package tenure

import (
	"context"
	"time"

	"github.com/tenure-dev/tenure/internal/boottime"
)

// TermControl is the owner's side of a Term made by StartTerm: it moves the
// term's local deadline after a renewal and ends it. User code gets the
// *Term only; whoever renews the lease keeps the TermControl.
type TermControl struct{ t *Term }

// StartTerm starts a term for grant g whose local deadline is deadline (a
// time.Now()-based time, carrying a monotonic reading). The term's context
// derives from parent's values but not its cancellation, and is cancelled at
// the deadline unless Extend moves it, or when End is called. Packages that
// run leadership other than the Elector's (package partition) use it, so
// that every term has one type and one set of rules.
//
// The deadline is also kept on the boot clock, which counts suspended time
// (see Term.BootDeadline): the same distance ahead of now as deadline is.
func StartTerm(parent context.Context, g Grant, deadline time.Time) (*Term, TermControl) {
	t := newTerm(context.WithoutCancel(parent), g, bothClocks(deadline), nil)
	return t, TermControl{t}
}

// bothClocks is the local deadline at deadline on Go's clock and the same
// distance ahead on the boot clock.
func bothClocks(deadline time.Time) localDeadline {
	return localDeadline{mono: deadline, boot: boottime.Now().Add(time.Until(deadline))}
}

// Extend moves the term's local deadline to the one a renewal of ttl
// produced. It reports false, and changes nothing, when the term has
// already ended or its deadline has passed: an ended term is never revived.
func (c TermControl) Extend(ttl time.Duration, deadline time.Time) bool {
	return c.t.extend(ttl, bothClocks(deadline))
}

// End ends the term now with cause, which should wrap ErrNotLeader (and
// ErrLost, ErrStaleToken when those are the reason); a nil cause records a
// plain end. Ending an ended term does nothing.
func (c TermControl) End(cause error) {
	if cause == nil {
		cause = ErrNotLeader
	}
	c.t.end(cause)
}

// Ended reports whether the term has ended.
func (c TermControl) Ended() bool { return c.t.isEnded() }

// Cause reports why the term ended, an error matching ErrNotLeader; nil
// while it is live.
func (c TermControl) Cause() error {
	if !c.t.isEnded() {
		return nil
	}
	return c.t.cause()
}
