package prom

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// partitionVecs are the collectors of partition groups.
type partitionVecs struct {
	owned, unowned, oldest, imbalance *prometheus.GaugeVec
	moves                             *prometheus.CounterVec
}

// PartitionStats is what a member of a partition group reports after each
// balancing round (see Metrics.SetPartitions).
type PartitionStats struct {
	// Owned is how many partitions this member owns.
	Owned int
	// Unowned is how many partitions of the group no member owns.
	Unowned int
	// OldestUnowned is how long the longest-unowned partition has been
	// without an owner; 0 when every partition is owned.
	OldestUnowned time.Duration
	// Imbalance is the partitions of the busiest member minus those of the
	// least busy one.
	Imbalance int
}

// SetPartitions sets the gauges of partition group: tenure_partitions_owned,
// tenure_partitions_unowned, tenure_partition_unowned_oldest_seconds and
// tenure_partition_imbalance. Groups are named by the application, so their
// number is bounded.
func (m *Metrics) SetPartitions(group string, s PartitionStats) {
	m.parts.owned.WithLabelValues(group).Set(float64(s.Owned))
	m.parts.unowned.WithLabelValues(group).Set(float64(s.Unowned))
	m.parts.oldest.WithLabelValues(group).Set(max(s.OldestUnowned.Seconds(), 0))
	m.parts.imbalance.WithLabelValues(group).Set(float64(s.Imbalance))
	m.parts.moves.WithLabelValues(group).Add(0) // present from the first report
}

// PartitionMoved counts n partitions of group that changed owner in
// tenure_partition_moves_total.
func (m *Metrics) PartitionMoved(group string, n int) {
	m.parts.moves.WithLabelValues(group).Add(float64(max(n, 0)))
}
