//go:build linux

package boottime

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

func now() Instant {
	if i, err := read(); err == nil {
		return i
	}
	return fallback()
}

func read() (Instant, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		// CLOCK_BOOTTIME exists on every Linux since 2.6.39, but a seccomp
		// filter may refuse the system call (Go's own clocks use the vDSO,
		// so a filter built by tracing a Go program may leave it out).
		// The reading must stay the host's, the one other processes (the
		// guard, lease check) compare theirs with: /proc/uptime.
		return uptime()
	}
	return Instant(ts.Nano()), nil
}

// uptime reads the boot clock from /proc/uptime, in hundredths of a second
// cut short, so a hundredth is added: the reading is never behind the
// clock, and a deadline never seems further away than it is. It fails
// when /proc/uptime cannot be read (/proc mounted with subset=pid) or is
// not the host's boot clock: behind this process's start on it (a
// container's uptime bound over it, as lxcfs does).
func uptime() (Instant, error) {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return 0, fmt.Errorf("boottime: CLOCK_BOOTTIME refused, and %w", err)
	}
	var up Instant
	if f := bytes.Fields(b); len(f) > 0 {
		if s, frac, ok := bytes.Cut(f[0], []byte(".")); ok {
			sec, err1 := strconv.ParseInt(string(s), 10, 64)
			cs, err2 := strconv.ParseInt(string(frac), 10, 64)
			if err1 == nil && err2 == nil && len(frac) == 2 {
				up = Instant(time.Duration(sec)*time.Second + time.Duration(cs+1)*10*time.Millisecond)
			}
		}
	}
	if up == 0 {
		return 0, fmt.Errorf("boottime: CLOCK_BOOTTIME refused, and /proc/uptime says %q", b)
	}
	if began, err := started(); err != nil || up < began {
		return 0, fmt.Errorf("boottime: CLOCK_BOOTTIME refused, and /proc/uptime (%s) is not the boot clock this process started at %s on (%v)",
			time.Duration(up), time.Duration(began), err)
	}
	return up, nil
}

// started is when this process started on the boot clock, to the clock
// tick (1/100 s) cut short: field 22 of /proc/self/stat.
func started() (Instant, error) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	f := bytes.Fields(b[i+1:]) // from field 3, the state
	if i < 0 || len(f) < 20 {
		return 0, fmt.Errorf("/proc/self/stat: %q", b)
	}
	ticks, err := strconv.ParseInt(string(f[19]), 10, 64)
	return Instant(time.Duration(ticks) * 10 * time.Millisecond), err
}
