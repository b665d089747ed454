package partition_test

import (
	"testing"

	"github.com/tenure-dev/tenure/partition"
)

func BenchmarkAssign(b *testing.B) {
	names, ms := partition.Names(10000), members(10)
	for b.Loop() {
		partition.Rebalance(names, ms, nil)
	}
}
