// Package partition runs per-partition leadership: a group of members
// shares P named partitions of one key, each partition led by at most one
// member at a time with its own fencing token, spread over the live
// members by rendezvous hashing capped at ⌈P/N⌉.
package partition
