package main

import (
	"testing"

	"github.com/tenure-dev/tenure/cmd/internal/bench"
)

// TestGuardFloors: each guard check passes a run on the right side of its
// floor and fails one past it.
func TestGuardFloors(t *testing.T) {
	handover := func(ratio float64) run {
		return run{Report: &bench.Report{Rows: []bench.Row{
			{Impl: "tenure", Latency: &bench.Summary{P50: 3 * ratio}, VsPeer: ratio, Peer: "etcd-election"},
			{Impl: "etcd-election", Latency: &bench.Summary{P50: 3}},
		}}}
	}
	ops := func(ratio1, ratio10 float64) run {
		return run{Report: &bench.Report{Rows: []bench.Row{
			{Impl: "tenure", Case: "clients=1", OpsPerSec: 1000 * ratio1, VsPeer: ratio1, Peer: "seed-sql"},
			{Impl: "seed-sql", Case: "clients=1", OpsPerSec: 1000},
			{Impl: "tenure", Case: "clients=10", OpsPerSec: 1000 * ratio10, VsPeer: ratio10, Peer: "seed-sql"},
			{Impl: "seed-sql", Case: "clients=10", OpsPerSec: 1000},
		}}}
	}
	cold := func(ms int64) run {
		return run{Partitions: &partitionsReport{ColdStartMS: ms, ClaimsPerSecond: 1}}
	}
	tests := []struct {
		name  string
		check int
		r     run
		want  bool
	}{
		{"handover at 1.4×", 0, handover(1.4), true},
		{"handover at 2.5×", 0, handover(2.5), false},
		{"ops at 0.6× and 0.5×", 1, ops(0.6, 0.5), true},
		{"ops at 0.6× and 0.1×", 1, ops(0.6, 0.1), false},
		{"ops at 0.1× and 0.6×", 1, ops(0.1, 0.6), false},
		{"cold start 2 s", 2, cold(2000), true},
		{"cold start 25 s", 2, cold(25000), false},
		{"cold start not measured", 2, cold(0), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			figures, ok := guardChecks[tc.check].eval(tc.r)
			if ok != tc.want {
				t.Errorf("%s: ok = %v; want %v (%v)", guardChecks[tc.check].name, ok, tc.want, figures)
			}
		})
	}
}
