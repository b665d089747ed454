package memory

import (
	"fmt"
	"math"
	"time"
)

// clock is the coordinator's clock: a piecewise-linear function of the
// process's monotonic clock. At real instant baseReal it read baseCoord, and
// since then it has advanced rate coordinator nanoseconds per real one.
// Readings are durations on the coordinator's own time line, comparable only
// with each other.
type clock struct {
	baseReal  time.Time // carries a monotonic reading
	baseCoord time.Duration
	rate      float64
}

// now reads the clock.
func (k *clock) now() time.Duration {
	return k.at(time.Now())
}

// at is the reading at real instant t.
func (k *clock) at(t time.Time) time.Duration {
	return k.baseCoord + time.Duration(float64(t.Sub(k.baseReal))*k.rate)
}

// realUntil is how long, in real time, until the clock reads t, given that
// it reads now; at least 1ns.
func (k *clock) realUntil(t, now time.Duration) time.Duration {
	d := time.Duration(math.Ceil(float64(t-now) / k.rate))
	return max(d, 1)
}

// rebase starts a new linear piece at the current instant.
func (k *clock) rebase() {
	t := time.Now()
	k.baseCoord = k.at(t)
	k.baseReal = t
}

// SetClockRate makes the coordinator's clock run at r times the real rate
// from now on: 1 is the real rate, 1.01 runs 1% fast (leases expire early
// in real time), 0.99 runs 1% slow. The reading does not jump. It panics
// unless r is positive and finite.
func (c *Coordinator) SetClockRate(r float64) {
	if !(r > 0) || math.IsInf(r, 0) {
		panic(fmt.Sprintf("memory: clock rate %v must be positive and finite", r))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clock.rebase()
	c.clock.rate = r
	c.pokeLocked()
}

// JumpClock moves the coordinator's clock by d at once: forward when d is
// positive (leases that the jump carries past their expiry expire now), back
// when it is negative (leases last longer in real time).
func (c *Coordinator) JumpClock(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clock.rebase()
	c.clock.baseCoord += d
	c.pokeLocked()
}
