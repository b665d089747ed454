// Package memory is an in-process tenure.Coordinator with fault hooks, for
// tests, demos and simulation.
//
// It keeps the same promises as the consensus-backed coordinators: fencing
// tokens strictly increase per key and are never reused (they survive
// Restart), leases expire on the coordinator's own clock, a lost grant is
// never revived, and followers watching a key hear of a release or an expiry
// at once. It passes tenuretest.RunCoordinatorTests.
//
// # Faults
//
// A test or demo injects faults per holder, the identity a node acquires
// with, as if that node's link to the coordinator failed:
//
//   - Partition: the node's calls fail at once with an error wrapping
//     ErrPartitioned.
//   - Block: the node's requests are lost; its calls hang until their
//     context ends.
//   - SetLatency: the request reaches the coordinator after one delay and
//     the reply reaches the node after another.
//   - DropReplies: requests are applied but replies are lost, so the node
//     cannot tell whether a call succeeded (it returns the context's error).
//   - Heal and HealAll remove faults.
//
// Leader and Watch name no holder: they are observers and are never faulted.
//
// The coordinator's clock can be made to drift (SetClockRate) or jump
// (JumpClock); expiry is decided on that clock alone, as a real coordinator
// decides it on its own. Restart simulates a crash and restart of the
// coordinator: calls in flight fail with ErrRestarted and watches close, but
// leases and tokens are durable, as in etcd.
//
// # Time
//
// The clock is a piecewise-linear function of Go's monotonic clock, and all
// waiting uses the time package's timers, so a Coordinator works inside a
// testing/synctest bubble, where time is virtual: create it inside the
// bubble and Close it before the bubble ends.
package memory
