// Package monitor serves what operators look at while tenure runs: /health
// (200 while the process works, whatever its role), /leader (200 only while
// this instance leads, for load-balancer checks), /status (JSON: every key
// with its holder, token and lease, and the recent transitions with their
// reasons), /status/partitions (pages of a partition table), /metrics
// (Prometheus) and, at /, a live status page embedded in the binary. The
// user's guide is docs/monitoring.md.
//
// A Monitor polls the coordinator for the keys it shows (every key under a
// prefix, when the coordinator can list them, or a fixed set of keys) and
// records the transitions it sees. An instance that campaigns also passes
// its Elector's observations through the Monitor (it is a tenure.Metrics
// that forwards to package prom), so that its own transitions carry their
// true reasons: acquired, released, deadline, lost, fenced. Transitions of
// other holders, seen only from outside, are acquired, released (gone
// before its lease ran out) or expired.
//
// Each lease seen from outside is followed from read to read (lease.go):
// its TTL granted, when it runs out (the latest read start plus the time
// left it reported, never later than the truth), when it was last renewed
// (its end less its TTL), and whether its holder is still renewing (see
// renewalOverdue). Transitions of other holders are stamped when they most
// likely happened: an expiry when the lease ran out, not when a poll
// noticed it.
//
// Partition groups (package partition) are read at every poll through
// Config.Partitions. /status carries each group's summary (owned, unowned,
// recently moved, each member's count and lease) and its first rows,
// unowned and recently moved first; /status/partitions pages through the
// rest (Partitions). A group's member shows only its group
// (Config.PartitionsOnly), records its partition terms' transitions with
// Record, and answers /leader with whether it owns a partition
// (Config.Leading).
package monitor
