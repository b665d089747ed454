package partitiontest

import (
	"sync"
	"time"

	"github.com/tenure-dev/tenure/internal/boottime"
)

// SimulateSuspend makes the boot clock (CLOCK_BOOTTIME, which every term's
// deadline is also kept on) follow a testing/synctest bubble's virtual time
// until restore is called, and returns suspend, which moves it forward
// alone, as a host suspend moves the boot clock but not Go's monotonic
// clock. Call it inside the bubble. Every reader of the boot clock in the
// process sees it (coordinators too, which read it for Member.Sent), so a
// test that calls it must not run in parallel with others.
func SimulateSuspend() (suspend func(d time.Duration), restore func()) {
	c := &suspendable{origin: time.Now()}
	return c.suspend, boottime.Simulate(c.now)
}

// suspendable is a boot clock for a synctest bubble: the bubble's time
// since origin, plus every suspend so far.
type suspendable struct {
	origin time.Time
	mu     sync.Mutex
	slept  time.Duration
}

func (c *suspendable) now() boottime.Instant {
	c.mu.Lock()
	defer c.mu.Unlock()
	return boottime.Instant(time.Since(c.origin) + c.slept)
}

func (c *suspendable) suspend(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.slept += d
}
