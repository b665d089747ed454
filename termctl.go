package tenure

import (
	"context"
)

// termControl is the owner's side of a Term made by sharedDeadline.Start
// or startTerm: it moves the term's local deadline after a renewal and ends
// it. User code gets the *Term only; whoever renews the lease keeps the
// termControl.
type termControl struct{ t *Term }

// startTerm starts a term for grant g whose local deadline is deadline. The
// term's context derives from parent's values but not its cancellation, and
// is cancelled at the deadline (on whichever clock reaches it first) unless
// Extend moves it, or when End is called. Only this package's tests call
// it.
func startTerm(parent context.Context, g Grant, deadline Instant) (*Term, termControl) {
	t := newTerm(context.WithoutCancel(parent), g, deadline)
	return t, termControl{t}
}

// Extend moves the term's local deadline to deadline, the one renewal g
// produced, and records g's TTL and send instant (g's key and token are the
// term's). It reports false, and changes nothing, when the term has already
// ended or its deadline has passed: an ended term is never revived.
func (c termControl) Extend(g Grant, deadline Instant) bool {
	return c.t.lease.extend(g, deadline)
}

// End ends the term now with cause, which should wrap ErrNotLeader (and
// ErrLost, ErrStaleToken when those are the reason); a nil cause records a
// plain end. Ending an ended term does nothing.
func (c termControl) End(cause error) {
	if cause == nil {
		cause = ErrNotLeader
	}
	c.t.end(cause)
}

// Ended reports whether the term has ended.
func (c termControl) Ended() bool { return c.t.isEnded() }

// Cause reports why the term ended, an error matching ErrNotLeader; nil
// while it is live.
func (c termControl) Cause() error {
	if !c.t.isEnded() {
		return nil
	}
	return c.t.cause()
}
