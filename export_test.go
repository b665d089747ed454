package tenure

import (
	"sync"
	"time"

	"github.com/tenure-dev/tenure/internal/boottime"
)

// SetBootClock replaces e's boot clock, so that tests can simulate a host
// suspend (the boot clock moves, Go's monotonic clock does not).
func SetBootClock(e *Elector, c boottime.Clock) { e.boot = c }

// NewSuspendableClock returns a boot clock that follows a synctest bubble's
// virtual time, and a function that moves it forward alone.
func NewSuspendableClock() (boottime.Clock, func(d time.Duration)) {
	c := newSuspendableClock()
	return c.now, c.suspend
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
