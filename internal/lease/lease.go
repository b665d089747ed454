// Package lease holds the one rule every holder of a lease in this module
// follows, the Elector's terms and partition groups' memberships alike: how
// long after the request that produced a grant its holder may act (Safe),
// its local deadline (Deadline), when to renew it (NextRenewal), and how far
// past a deadline now is (Past).
package lease

import (
	"errors"
	"fmt"
	"time"

	"github.com/tenure-dev/tenure/internal/boottime"
)

// SuspendNoise is how far the boot clock may run ahead of Go's monotonic
// clock before the difference counts as a suspend. Two clocks read a moment
// apart differ by scheduling noise; inside a testing/synctest bubble, whose
// virtual time stands still while goroutines compute, the real boot clock
// runs ahead by however long they compute. A suspend shorter than this is
// of the same order as the scheduling delays a lease's margin allows for.
const SuspendNoise = 50 * time.Millisecond

// ErrNoSent is returned by Deadline for a grant that does not say when the
// request that produced it was sent: its lease's age is unknown, so it has
// no safe deadline.
var ErrNoSent = errors.New("the grant does not say when its request was sent (zero Sent): its lease's age is unknown, so no safe deadline can be computed")

// Safe is how long after sending the request that produced a grant of ttl
// its holder may act: ttl·(1 − maxDrift) − margin.
func Safe(ttl time.Duration, maxDrift float64, margin time.Duration) time.Duration {
	return time.Duration(float64(ttl)*(1-maxDrift)) - margin
}

// An instant is a reading of the clocks a deadline is kept on
// (tenure.Instant).
type instant[I any] interface {
	IsZero() bool
	Add(time.Duration) I
}

// Deadline is the local deadline of a grant of ttl whose request was sent
// at sent: sent + Safe(ttl, maxDrift, margin). A zero sent is an error
// wrapping ErrNoSent that names the ttl.
func Deadline[I instant[I]](sent I, ttl time.Duration, maxDrift float64, margin time.Duration) (I, error) {
	if sent.IsZero() {
		var zero I
		return zero, fmt.Errorf("grant of TTL %s: %w", ttl, ErrNoSent)
	}
	return sent.Add(Safe(ttl, maxDrift, margin)), nil
}

// NextRenewal is how long after a renewal (or the grant) the next renewal
// is due, for a lease granted for granted with remaining left until the
// local deadline: interval, but never more than a third of the TTL granted
// nor half the time left (a lease granted ahead has less), so that failed
// attempts can be retried before the deadline. At least 1ms.
func NextRenewal(interval, granted, remaining time.Duration) time.Duration {
	return max(min(interval, granted/3, remaining/2), time.Millisecond)
}

// Past reports how far past a local deadline (mono on Go's monotonic clock,
// boot on the boot clock) now is: negative while it is not. Go's monotonic
// clock decides, plus the time the host spent suspended since the deadline
// was set, which only the boot clock counts (beyond SuspendNoise).
func Past(mono time.Time, boot boottime.Instant) time.Duration {
	over := time.Since(mono)
	suspended := boottime.Now().Sub(boot) - over
	if suspended <= SuspendNoise {
		return over
	}
	return over + suspended
}
