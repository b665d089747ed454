package cli

import (
	"sync"
	"time"
)

// waitLimit ends a campaign that has not led within d (0: never).
type waitLimit struct {
	d      time.Duration
	onFire func()

	mu       sync.Mutex
	timer    *time.Timer
	leading  bool
	hasFired bool
}

func newWaitLimit(d time.Duration, onFire func()) *waitLimit {
	return &waitLimit{d: d, onFire: onFire}
}

// campaigning starts the clock, unless it is already running.
func (w *waitLimit) campaigning() {
	if w.d <= 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.leading = false
	if w.timer != nil || w.hasFired {
		return
	}
	w.timer = time.AfterFunc(w.d, func() {
		w.mu.Lock()
		if w.leading || w.timer == nil {
			w.mu.Unlock()
			return
		}
		w.hasFired = true
		w.timer = nil
		w.mu.Unlock()
		w.onFire()
	})
}

// elected stops the clock.
func (w *waitLimit) elected() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.leading = true
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
}

// stop stops the clock for good.
func (w *waitLimit) stop() { w.elected() }

func (w *waitLimit) fired() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.hasFired
}
