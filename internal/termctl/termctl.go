// Package termctl reads what a tenure.Term keeps for its owner rather than
// for user code: the deadline on the boot clock, to hand to another process
// (`tenure run` hands it to its guard), and the news of its next renewal.
package termctl

import (
	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/termhook"
)

// BootDeadline is t's local deadline on the boot clock (CLOCK_BOOTTIME on
// Linux: nanoseconds since the host booted, counting suspended time): the
// same instant as t.Deadline, measured from the same send time, but one
// that can be handed to another process on the same host.
func BootDeadline(t *tenure.Term) int64 {
	return termhook.BootDeadline.(func(*tenure.Term) int64)(t)
}

// Renewed returns a channel that is closed when a renewal next moves t's
// local deadline: then read the deadline again, and call Renewed again for
// the renewal after. Call it before reading the deadline, so that no
// renewal can fall between the two unseen. Once the term has ended the
// channel is never closed: wait on t.Context().Done() too.
func Renewed(t *tenure.Term) <-chan struct{} {
	return termhook.Renewed.(func(*tenure.Term) <-chan struct{})(t)
}

// Reason is transition kind k as one of the five reasons that logs, metrics
// and status pages give for a transition: k's String, except that
// SteppedDown is "released" too (the node gave the key up on purpose).
func Reason(k tenure.TransitionKind) string {
	if k == tenure.SteppedDown {
		return "released"
	}
	return k.String()
}

// Boot is instant i on the boot clock (CLOCK_BOOTTIME on Linux: nanoseconds
// since the host booted, counting suspended time).
func Boot(i tenure.Instant) int64 {
	return termhook.InstantBoot.(func(tenure.Instant) int64)(i)
}
