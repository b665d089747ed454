// Package termhook hands package partition the root package's terms that
// share one local deadline (a member's partitions all end with its one
// membership lease), without exporting them from the root, where users
// would see them. Package tenure sets NewShared when it is initialized,
// before any package that imports it runs.
package termhook

import (
	"context"
	"time"
)

// Shared is one local deadline that many terms share: G is tenure.Grant,
// T is *tenure.Term and I is tenure.Instant.
type Shared[G, T, I any] interface {
	// Start starts a term for grant g under the shared deadline. Past the
	// deadline or after Stop, it returns a term already ended.
	Start(parent context.Context, g G) (T, Control[G, I])
	// Extend moves the deadline to dl, the one renewal that produced ttl
	// and sent, for every live term; a term past its deadline is ended.
	Extend(ttl time.Duration, sent, dl I)
	// Stop stops the deadline's timer; live terms are not ended.
	Stop()
}

// Control is the owner's side of one term: it moves the term's deadline
// after a renewal and ends it. G is tenure.Grant, I is tenure.Instant.
type Control[G, I any] interface {
	// Extend moves the term's local deadline to deadline, the one renewal
	// g produced; false, and no change, when the term has ended or its
	// deadline has passed.
	Extend(g G, deadline I) bool
	// End ends the term now with cause (nil: a plain end).
	End(cause error)
	// Ended reports whether the term has ended.
	Ended() bool
	// Cause reports why the term ended; nil while it is live.
	Cause() error
}

// NewShared is a func(tenure.Instant) Shared[tenure.Grant, *tenure.Term,
// tenure.Instant] that returns a shared deadline at the given instant,
// watched by one timer until Stop. Package tenure sets it.
var NewShared any

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
