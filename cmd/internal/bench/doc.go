// Package bench measures tenure beside the recipes a user would pick
// instead, on real servers, in one run: the library behind `tenure bench`.
//
// Each benchmark runs tenure and its peer alternately (trial by trial, or
// round by round), so that the machine's load falls on both alike, and
// reports each figure beside the physical floor it cannot beat, measured in
// the same run:
//
//   - Handover: the leader releases; time until the successor acts. Peers:
//     etcd's concurrency.Election; the seed SQL re-run by a polling
//     contender. Floor: the release's notification (on etcd a write and
//     its watch event, on PostgreSQL a NOTIFY) plus one write round trip.
//   - Failover: the leading process is SIGKILLed; time until the successor
//     (another process) acts. Peers: a concurrency.Mutex holder (what
//     `etcdctl lock` does); the seed SQL. Floor: the old lease's expiry at
//     the coordinator. A successor acting before that is a failure.
//   - Throughput: acquire/renew/release cycles per second at several
//     concurrencies, and the cost of renewing many keys of one holder.
//   - Footprint: what `tenure run` costs beside each replica it wraps, next
//     to `etcdctl lock` on the same etcd: resident memory and CPU while
//     both lead, idle; wall and CPU time of `run -- true` as a whole
//     process. No floor: the goal is a ratio to the peer.
//   - TTL: a model, fed with the round trips and stalls measured here (or
//     given), of crash failover time and wrongful demotions per hour for a
//     list of TTLs.
//
// A Report holds every figure; it prints as a table, as JSON (durations in
// milliseconds, in fields named *_ms) and as a self-contained HTML page with
// latency CDF plots.
package bench
