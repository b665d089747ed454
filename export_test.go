package tenure

import (
	"sync"
	"time"

	"github.com/tenure-dev/tenure/internal/boottime"
)

// SimulateSuspend makes the boot clock follow a synctest bubble's virtual
// time until restore is called, and returns a function that moves it
// forward alone, as a host suspend moves CLOCK_BOOTTIME but not
// CLOCK_MONOTONIC. Every reader of the boot clock in the process sees it
// (coordinators too, which read it for Grant.Sent).
func SimulateSuspend() (suspend func(d time.Duration), restore func()) {
	c := newSuspendableClock()
	return c.suspend, boottime.Simulate(c.now)
}

// suspendableClock is a boot clock for a synctest bubble: it follows the
// bubble's virtual time, and suspend moves it forward alone, as a host
// suspend moves CLOCK_BOOTTIME but not CLOCK_MONOTONIC.
type suspendableClock struct {
	origin time.Time
	mu     sync.Mutex
	slept  time.Duration
}

func newSuspendableClock() *suspendableClock { return &suspendableClock{origin: time.Now()} }

func (c *suspendableClock) now() boottime.Instant {
	c.mu.Lock()
	defer c.mu.Unlock()
	return boottime.Instant(time.Since(c.origin) + c.slept)
}

func (c *suspendableClock) suspend(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.slept += d
}
