// Package tenure is leader election that stays safe when a leader goes stale.
//
// Nodes compete for a lease on a key held by a consensus-backed Coordinator:
// etcd (an etcd cluster of your own, or a member embedded in your process),
// PostgreSQL, or Kubernetes Leases; or the in-process memory coordinator for
// tests and demos. Every grant carries a fencing token that strictly increases per key;
// protected resources reject tokens older than the newest they have seen; and
// a leader that cannot prove its lease is still safely held stops acting by
// itself, at a local deadline measured on its own monotonic clock:
//
//	deadline = t_send + TTL·(1 − MaxDrift) − Margin
//
// where t_send is when the request that last started or extended the grant's
// lease was sent (Grant.Sent; a lease granted ahead of the acquisition counts
// from its own grant). The coordinator starts the lease no earlier than that and expires
// it no sooner than TTL later on its own clock, so as long as the two clocks'
// rates differ by at most MaxDrift, the holder stops before anyone else can be
// granted the key. A process pause can still carry a leader past its deadline
// with a write in flight; that is what fencing tokens are for.
//
// The main entry point is [Elector.Run]: it campaigns for the key, hands user
// code a [Term] while it leads, renews the lease in the background, cancels the
// term's context at the local deadline or the moment the grant is lost, and
// releases the key when the user function returns so that a follower takes
// over in one round trip instead of a TTL. An [Observer] follows who leads a
// key without campaigning for it.
//
// Coordinators live in sibling packages: etcd, postgres, memory, and kube
// (module github.com/tenure-dev/tenure/kube, which brings client-go); an
// etcd member to run in-process is package embedded (module
// github.com/tenure-dev/tenure/embedded). Per-partition leadership is
// package partition; fenced resources package fence; the conformance suite
// every Coordinator must pass package tenuretest.
package tenure
