package tenure

import (
	"time"

	"github.com/tenure-dev/tenure/internal/boottime"
	"github.com/tenure-dev/tenure/internal/lease"
)

// An Instant is one moment read on both of this process's clocks: Go's
// monotonic clock and the boot clock, which keeps counting while the host is
// suspended (CLOCK_BOOTTIME on Linux). Coordinators read one with Now right
// before they send a request that starts or extends a lease, and report it
// as Grant.Sent or Member.Sent; a holder's local deadline is that instant
// plus Config.SafeLease of the TTL granted, on both clocks. An Instant means
// nothing in another process (except its boot reading, on the same host);
// the zero Instant means "not read". Used by Elector and partition to count
// deadlines, and by the backends.
type Instant struct {
	mono time.Time        // carries a monotonic reading
	boot boottime.Instant // on the boot clock
}

// Now reads both clocks. Called by every backend right before it sends a
// request that starts or extends a lease.
func Now() Instant { return Instant{mono: time.Now(), boot: boottime.Now()} }

// IsZero reports whether i was never read.
func (i Instant) IsZero() bool { return i.mono.IsZero() }

// Add returns i moved forward by d on both clocks.
func (i Instant) Add(d time.Duration) Instant {
	return Instant{mono: i.mono.Add(d), boot: i.boot.Add(d)}
}

// Earlier returns whichever of i and j is earlier on each clock: a deadline
// counted from it is never later than one counted from either. A zero
// Instant is ignored.
func (i Instant) Earlier(j Instant) Instant {
	switch {
	case i.IsZero():
		return j
	case j.IsZero():
		return i
	}
	out := i
	if j.mono.Before(out.mono) {
		out.mono = j.mono
	}
	if j.boot < out.boot {
		out.boot = j.boot
	}
	return out
}

// Until is how long until i: negative once it has passed. Go's monotonic
// clock decides, plus the time the host spent suspended meanwhile, which
// only the boot clock counts (a difference under 50 ms is taken for
// scheduling noise, as a Term takes it).
func (i Instant) Until() time.Duration {
	return -lease.Past(i.mono, i.boot)
}

// Time is i on Go's clock: a time.Time with a monotonic reading, to compare
// with time.Now() in this process only.
func (i Instant) Time() time.Time { return i.mono }

// Boot is i on the boot clock: nanoseconds since the host booted (Linux), the
// same for every process on the host.
func (i Instant) Boot() int64 { return int64(i.boot) }
