// Package termhook hands internal/termctl what a tenure.Term keeps for its
// owner rather than for user code (its deadline on the boot clock, the news
// of its next renewal), without exporting it from the root, where users
// would see it. Package tenure sets the hooks when it is initialized,
// before any package that imports it runs.
package termhook

// BootDeadline is a func(*tenure.Term) int64 that returns the term's local
// deadline on the boot clock (CLOCK_BOOTTIME on Linux: nanoseconds since
// the host booted, counting suspended time), the same instant as its
// Deadline, which can be handed to another process on the same host (as
// `tenure run` hands it to its guard). Package tenure sets it.
var BootDeadline any

// Renewed is a func(*tenure.Term) <-chan struct{} that returns a channel
// closed when a renewal next moves the term's local deadline; once the
// term has ended it is never closed. Package tenure sets it.
var Renewed any

// InstantBoot is a func(tenure.Instant) int64 that returns an instant on
// the boot clock. Package tenure sets it.
var InstantBoot any
