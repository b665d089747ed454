// Package chaos verifies tenure under real faults: it runs real node
// processes, each a tenure.Elector against a real coordinator (embedded or
// external etcd, or PostgreSQL) reached through its own TCP proxy, lets every
// leader write to a fenced register service as fast as it reasonably can,
// injects faults on a seeded schedule (partitions, one-way blackholes,
// latency, latency then a partition, reset connections, SIGSTOP pauses,
// SIGKILL crashes with restarts, loss of an etcd member), records every
// event on the machine's shared monotonic clock, and checks the history:
//
//   - stale writes accepted: the register accepted a token lower than one it
//     had accepted before (must be 0, always);
//   - token order: a term that began after another ended has a greater
//     token, and accepted tokens never decrease;
//   - safe-lease overlap: two nodes' [elected, local deadline or demotion]
//     intervals overlap;
//   - lease overrun: a leader's write landed after the lease it was acting on
//     could have expired at the coordinator (last acquire or renewal sent +
//     TTL), not counting writes that were in flight across a pause of their
//     process — only fencing can stop those;
//   - linearizability of the register history (porcupine), with writes whose
//     outcome the writer never learned modelled as unknown; a history
//     porcupine cannot decide in time fails the run;
//   - liveness: after each fault heals, time until a leader's write is
//     accepted again, and the share of the run with no leader.
//
// Each checker is a function of a History (CheckStaleWrites,
// CheckTokenOrder, CheckOverlap, checkLeaseOverrun, checkLinearizable);
// Analyze runs them all. The in-process simulation of package tenure
// records the same History and is judged by the same checkers.
//
// Planted bugs (Options.Plant, PlantFamilies) prove that the checkers can
// fail. The command line front end is "tenure verify"; the node processes
// are "tenure verify-node".
package chaos
