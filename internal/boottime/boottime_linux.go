//go:build linux

package boottime

import (
	"bytes"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

func now() Instant {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		// CLOCK_BOOTTIME exists on every Linux since 2.6.39, but a seccomp
		// filter may refuse the system call (Go's own clocks use the vDSO,
		// so a filter built by tracing a Go program may leave it out).
		// The reading must stay the host's, the one other processes (the
		// guard, lease check) compare theirs with: /proc/uptime.
		return uptime()
	}
	return Instant(ts.Nano())
}

// uptime reads the boot clock from /proc/uptime, in hundredths of a second
// cut short, so a hundredth is added: the reading is never behind the
// clock, and a deadline never seems further away than it is. Where even
// that cannot be read, it falls back to the monotonic clock, as on other
// systems.
func uptime() Instant {
	b, err := os.ReadFile("/proc/uptime")
	if err == nil {
		if f := bytes.Fields(b); len(f) > 0 {
			if s, frac, ok := bytes.Cut(f[0], []byte(".")); ok {
				sec, err1 := strconv.ParseInt(string(s), 10, 64)
				cs, err2 := strconv.ParseInt(string(frac), 10, 64)
				if err1 == nil && err2 == nil && len(frac) == 2 {
					return Instant(time.Duration(sec)*time.Second + time.Duration(cs+1)*10*time.Millisecond)
				}
			}
		}
	}
	return fallback()
}
