// Package timerwait keeps timers off a race-detector runtime bug.
//
// Inside a testing/synctest bubble, a timer that is due at once (a
// duration of zero or less) runs on the goroutine that sets it, under one
// race context the whole bubble shares; two goroutines doing so at the
// same moment corrupt the race detector's state, and the test binary dies
// with "ThreadSanitizer: CHECK failed" or a fault (golang/go#78156). A
// positive duration puts the timer in the bubble's heap instead, whose
// timers run one at a time. Outside a bubble one nanosecond changes
// nothing.
package timerwait

import "time"

// Delay is d for a timer (time.NewTimer, Timer.Reset, time.AfterFunc): d,
// but at least one nanosecond.
func Delay(d time.Duration) time.Duration { return max(d, time.Nanosecond) }
