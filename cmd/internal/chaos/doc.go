// Package chaos verifies tenure under real faults: it runs real node
// processes, each a tenure.Elector against a real coordinator (embedded or
// external etcd, PostgreSQL, or the Leases of a Kubernetes API server:
// kube.go) reached through its own TCP proxy, lets every leader write to a
// fenced register service as fast as it reasonably can, injects faults on a
// seeded schedule (partitions, one-way blackholes, latency, latency then a
// partition, reset connections, SIGSTOP pauses, SIGKILL crashes with
// restarts, loss of an etcd member, a crash and restart of an API server the
// run started, node clocks off their rate and wall clocks that jump),
// records every event on the
// machine's shared monotonic clock, and checks the history:
//
//   - stale writes accepted: the register accepted a token lower than one it
//     had accepted before (must be 0, always);
//   - token order: a term that began after another ended has a greater
//     token, and accepted tokens never decrease;
//   - safe-lease overlap: two nodes' [elected, local deadline or demotion]
//     intervals overlap;
//   - lease overrun: a leader's write landed after the lease it was acting on
//     could have expired at the coordinator (last acquire or renewal sent +
//     TTL·(1−MaxDrift), see Clock faults), not counting writes that were in
//     flight across a pause of their process — only fencing can stop those;
//   - linearizability of the register history (porcupine), with writes whose
//     outcome the writer never learned modelled as unknown; a history
//     porcupine cannot decide in time fails the run;
//   - liveness: after each fault heals, time until a leader's write is
//     accepted again, and the share of the run with no leader.
//
// Each checker is a function of a History: those that need only the terms
// and the register's decisions are package history's (CheckStaleWrites,
// CheckTokenOrder, CheckOverlap), the others are this package's
// (checkLeaseOverrun, checkLinearizable); Analyze runs them all. The
// in-process simulations of packages tenure and partition record the same
// history format and are judged by package history's checkers.
//
// Planted bugs (Options.Plant, PlantFamilies) prove that the checkers can
// fail. The command line front end is "tenure verify"; the node processes
// are "tenure verify-node".
//
// # Clock faults
//
// The design rests on one assumption about clocks: the node's and the
// coordinator's run at rates that differ by at most MaxDrift. A node's
// clock bears on safety only through the length of its local deadlines,
// Sent + SafeLease(TTL) measured on that clock: a node clock running at rate
// r against real time puts the deadline SafeLease(TTL)/r after the send in
// real time. That is the hook, and all of it. Each node process keeps a
// clock of its own (nodeClock), which the runner sets with JSON lines on the
// node's standard input, and a coordinator wrapper between the Elector (or
// partition member) and the coordinator (clocked, clockedGroup, above the
// planted bugs and the recorder) moves each grant's or membership's Sent by
// SafeLease(TTL)·(1/r − 1): the Elector keeps reading the real clocks and
// stops exactly where a clock at rate r would stop it. A clock off its rate
// would also stretch renewal intervals and retries; those bear on liveness
// only and are left alone. The hook is reachable only from verify's node
// processes: nothing in `tenure run` calls RunNode, and a node's clock has
// no input but the pipe from its runner.
//
// A clock fault runs the struck node's clock at a rate drawn within
// MaxDrift of true (in the outer half of the bound, slow seven times in ten:
// slow is the direction that carries a leader past its lease) and jumps its
// wall clock forward by half a TTL to a TTL; after half a TTL, so that a
// renewal or two is counted on that clock, it cuts the node off from the
// coordinator for at least 1.25 TTL, so that its lease runs out and its
// deadline, counted on the off clock, decides when it stops. At the heal
// the clock is true again: rate 1, the wall clock back by the jump.
//
// The lease-overrun checker judges each lease by the rate it was counted
// at (recorded with the lease): the coordinator's clock may run at most
// MaxDrift faster than the node's, so the lease may end TTL·(1−MaxDrift)/r
// after its send, and never later than the TTL the coordinator really keeps
// on this machine's clock, however slow the node's clock. Within the bound,
// the margin and the drift allowance absorb every rate, and runs are clean.
// Without a margin the drift allowance would still absorb the rate, but
// nothing would absorb the flight of a write sent just before the
// deadline: any family that makes a leader lose its lease could then
// report an overrun, which is what the margin is for (--margin must be at
// least timing.MinMargin, 50ms; the no-margin plant removes it).
//
// Wall-clock jumps: nothing in tenure compares wall-clock times (deadlines
// use Go's monotonic clock and the boot clock), so jumps must change
// nothing. The machine's clock cannot be moved (it would disturb etcd,
// PostgreSQL and the harness) and no namespace offsets CLOCK_REALTIME for one
// process, so a node's wall clock is the machine's plus an offset the
// clock faults move; only code written against it sees it. The shipped
// node never reads it: the family checks, by the clean runs, that no
// decision waits on the wall clock, and the wall-clock plant shows that the
// jumps reach the node and that the checkers catch a deadline computed
// through the wall clock.
//
// The clock plants, each caught by the lease-overrun checker on a clock
// fault struck on the leader, with a clean control run of the same
// schedule:
//
//   - slow-clock: while a clock fault is in force, the node's clock runs at
//     SafeLease(TTL)/(1.25·TTL), whatever rate the fault set: slower than any
//     MaxDrift allows, by more than the margin absorbs, so that its local
//     deadline falls a quarter TTL after its lease;
//   - wall-clock: the node reads each lease's send on its wall clock and
//     converts it to its monotonic clock with the offset between the two
//     that it measured when its term (or membership) began, a stale
//     offset: once the wall clock has jumped forward, every renewal puts
//     the deadline the jump later, past the lease. It acts on renewals
//     that succeed, so it needs no call to reach the coordinator during
//     the cut (a partition member may make none before its deadline: its
//     loop can be held by a membership read that hangs).
package chaos
