package tenure

import (
	"time"

	"github.com/tenure-dev/tenure/internal/boottime"
)

// SimulateSuspend makes the boot clock follow a synctest bubble's virtual
// time until restore is called, and returns a function that moves it
// forward alone, as a host suspend moves CLOCK_BOOTTIME but not
// CLOCK_MONOTONIC (boottime.NewSuspendable). Every reader of the boot clock
// in the process sees it (coordinators too, which read it for Grant.Sent).
func SimulateSuspend() (suspend func(d time.Duration), restore func()) {
	c, suspend := boottime.NewSuspendable()
	return suspend, boottime.Simulate(c)
}

// StartTerm is startTerm, for the adversarial term tests.
var StartTerm = startTerm
