package chaos

import (
	"time"

	"golang.org/x/sys/unix"
)

// Mono returns the machine's CLOCK_MONOTONIC in nanoseconds. Every process on
// one machine reads the same clock, so stamps taken by different processes
// order their events.
func Mono() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic("chaos: clock_gettime(CLOCK_MONOTONIC): " + err.Error())
	}
	return ts.Nano()
}

// monoOf converts a time.Time with a monotonic reading (from time.Now, plus
// or minus durations) to the Mono clock.
func monoOf(t time.Time) int64 {
	return Mono() + int64(time.Until(t))
}
