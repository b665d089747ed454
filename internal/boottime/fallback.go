package boottime

import "time"

// start anchors the fallback clock: the process's monotonic clock, which on
// platforms without CLOCK_BOOTTIME is the best there is.
var start = time.Now()

func fallback() Instant { return Instant(time.Since(start)) }
