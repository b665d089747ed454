// Package monitor serves what operators look at while tenure runs: /health
// (200 while the process works, whatever its role), /leader (200 only while
// this instance leads, for load-balancer checks), /status (JSON: every key
// with its holder, token and lease left, and the recent transitions with
// their reasons), /metrics (Prometheus) and, at /, a live status page
// embedded in the binary.
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
// Partition groups (package partition) are shown as tables read at every
// poll through Config.Partitions: each partition's owner, token and lease
// left, and how long it has been unowned. A group's member shows only its
// group (Config.PartitionsOnly), records its partition terms' transitions
// with Record, and answers /leader with whether it owns a partition
// (Config.Leading).
package monitor
