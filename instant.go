package tenure

import (
	"time"

	"github.com/tenure-dev/tenure/internal/boottime"
)

// An Instant is one moment read on both of this process's clocks: Go's
// monotonic clock and the boot clock, which keeps counting while the host
// is suspended (CLOCK_BOOTTIME on Linux). Coordinators read one with Now
// right before they send a request that starts or extends a lease, and
// report it as Grant.Sent or Member.Sent; a holder's local deadline is that
// instant plus TTL·(1 − Config.MaxDrift) − Config.Margin, on both clocks.
// An Instant means nothing in another process (except its boot reading, on
// the same host); the zero Instant means "not read".
type Instant struct {
	mono time.Time        // carries a monotonic reading
	boot boottime.Instant // on the boot clock
}

// Now reads both clocks.
func Now() Instant { return Instant{mono: time.Now(), boot: boottime.Now()} }

// IsZero reports whether i was never read.
func (i Instant) IsZero() bool { return i.mono.IsZero() }

// Add returns i moved forward by d on both clocks.
func (i Instant) Add(d time.Duration) Instant {
	return Instant{mono: i.mono.Add(d), boot: i.boot.Add(d)}
}

// Until is how long until i: negative once it has passed, by the one rule
// a term's Check uses. Go's monotonic clock decides, less the time the host
// spent suspended since, which only the boot clock counts (a suspend up to
// the least Config.Margin, 50 ms, is taken for scheduling noise: in a
// testing/synctest bubble the boot clock runs ahead by the real time the
// bubble computes).
func (i Instant) Until() time.Duration { return -i.past() }

// past reports how far past i now is: negative while it is not. Go's
// monotonic clock decides, plus the time the host spent suspended since i
// was read, which only the boot clock counts (beyond suspendNoise). It is
// the one rule of "past the local deadline".
func (i Instant) past() time.Duration {
	over := time.Since(i.mono)
	suspended := boottime.Now().Sub(i.boot) - over
	if suspended <= suspendNoise {
		return over
	}
	return over + suspended
}

// Boot is i on the boot clock, in nanoseconds. On Linux that is
// CLOCK_BOOTTIME, nanoseconds since the host booted counting suspended
// time, which every process on the host reads the same: hand it to another
// process there (with clock_gettime(CLOCK_BOOTTIME)) to enforce a deadline
// outside this one. On other systems it counts from this process's start
// and means nothing elsewhere.
func (i Instant) Boot() int64 { return int64(i.boot) }

// Time is i on Go's clock: a time.Time with a monotonic reading, to compare
// with time.Now() in this process only.
func (i Instant) Time() time.Time { return i.mono }
