// Package boottime reads a clock that only moves forward and keeps counting
// while the host is suspended: CLOCK_BOOTTIME on Linux.
//
// Go's monotonic clock (the reading inside time.Now()) is CLOCK_MONOTONIC on
// Linux, which stops while the machine or VM is suspended. A lease deadline
// measured on it would let a leader that was suspended for longer than its
// lease believe, after resume, that it still leads. tenure measures every
// local deadline on this clock too, and treats a term as over when either
// clock says so.
//
// Readings are durations since an arbitrary fixed point (boot, on Linux) that
// is the same for every process on the host in one time namespace, so a
// deadline computed in one process can be handed to another (the guard of
// `tenure run`). A process in a time namespace of its own reads the clock
// offset by its namespace's boottime offset (time_namespaces(7)).
package boottime

import (
	"sync/atomic"
	"time"
)

// An Instant is a reading of the boot clock: nanoseconds since the host
// booted on Linux. Two Instants taken on one host compare meaningfully
// across processes; they mean nothing on another host.
type Instant int64

// simulated, when set, replaces the real clock (see Simulate).
var simulated atomic.Pointer[Clock]

// Now reads the boot clock.
func Now() Instant {
	if c := simulated.Load(); c != nil {
		return (*c)()
	}
	return now()
}

// Read reads the boot clock as Now does, but fails where Now would fall
// back to a clock of this process's own, which another process's readings
// cannot be compared with: on Linux, CLOCK_BOOTTIME refused (a seccomp
// filter) and /proc/uptime unreadable or not the host's boot clock. A
// deadline handed from one process to another is read with it.
func Read() (Instant, error) {
	if c := simulated.Load(); c != nil {
		return (*c)(), nil
	}
	return read()
}

// Simulate makes Now read c until the returned function is called, so that a
// test can suspend the host in simulation: c moves forward while Go's
// monotonic clock stands still. It is for tests only: every reader of the
// boot clock in the process sees c, so a test that simulates must not run in
// parallel with others.
func Simulate(c Clock) (restore func()) {
	simulated.Store(&c)
	return func() { simulated.Store(nil) }
}

// Add returns i moved forward by d.
func (i Instant) Add(d time.Duration) Instant { return i + Instant(d) }

// Sub returns i − j.
func (i Instant) Sub(j Instant) time.Duration { return time.Duration(i - j) }

// Until returns how long until i on the boot clock (negative once past).
func Until(i Instant) time.Duration { return i.Sub(Now()) }

// Since returns how long ago i was on the boot clock.
func Since(i Instant) time.Duration { return Now().Sub(i) }

// A Clock reads the boot clock. Code that must be tested against a
// simulated suspend takes a Clock; production code passes Now.
type Clock func() Instant
