//go:build linux

package boottime

import "golang.org/x/sys/unix"

func now() Instant {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		// CLOCK_BOOTTIME exists on every Linux since 2.6.39; if it is
		// refused, fall back to the monotonic clock rather than fail.
		return fallback()
	}
	return Instant(ts.Nano())
}
