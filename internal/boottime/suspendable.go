package boottime

import (
	"sync"
	"time"
)

// NewSuspendable returns a boot clock for a testing/synctest bubble, to hand
// to Simulate, and suspend, which moves it forward alone, as a host suspend
// moves CLOCK_BOOTTIME but not Go's monotonic clock. The clock reads the
// bubble's time since the call plus every suspend so far. Call it inside the
// bubble. It is for tests only (see Simulate).
func NewSuspendable() (c Clock, suspend func(d time.Duration)) {
	s := &suspendable{origin: time.Now()}
	return s.now, s.suspend
}

// suspendable is the clock NewSuspendable returns.
type suspendable struct {
	origin time.Time
	mu     sync.Mutex
	slept  time.Duration
}

func (s *suspendable) now() Instant {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Instant(time.Since(s.origin) + s.slept)
}

func (s *suspendable) suspend(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.slept += d
}
