package prom

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/partition"
)

// PartitionMetrics is a partition.Metrics backed by Prometheus collectors.
// Create it with NewPartition and set it as partition.Config.Metrics. Its
// labels are the group and the move reason, never the partition, so series
// do not grow with the number of partitions. It is safe for concurrent use
// and never blocks.
type PartitionMetrics struct {
	owned, members, unowned, oldest, imbalance *prometheus.GaugeVec
	moves                                      *prometheus.CounterVec
}

var _ partition.Metrics = (*PartitionMetrics)(nil)

// NewPartition creates the partition collectors and registers them on reg,
// with the options and error reporting of New (nothing stays registered on
// error). Set the result as partition.Config.Metrics.
func NewPartition(reg prometheus.Registerer, opts ...Option) (*PartitionMetrics, error) {
	if reg == nil {
		return nil, fmt.Errorf("%w: prom: registerer is nil", tenure.ErrInvalidConfig)
	}
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: o.namespace, Name: name, ConstLabels: o.constLabels, Help: help}, []string{labelGroup})
	}
	m := &PartitionMetrics{
		owned:     gauge("partitions_owned", "Partitions of the group this member runs now."),
		members:   gauge("partition_members", "Live members of the group, as this member last read them."),
		unowned:   gauge("partitions_unowned", "Partitions of the group with no live owner, as this member last read the table."),
		oldest:    gauge("partition_oldest_unowned_seconds", "How long the partition of the group unowned for longest has been unowned, as far as this member has seen; 0 when all are owned."),
		imbalance: gauge("partition_imbalance_ratio", "Most partitions one member of the group owns divided by the mean, P/N; 1 is perfect balance."),
		moves: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: o.namespace, Name: "partition_moves_total", ConstLabels: o.constLabels,
			Help: "Partitions of the group this member took or gave up, by reason: claimed, rebalanced, left, lost, fenced, returned.",
		}, []string{labelGroup, labelReason}),
	}
	return m, m.register(reg, o.namespace)
}

func (m *PartitionMetrics) register(reg prometheus.Registerer, ns string) error {
	return register(reg, []named{
		{ns + "_partitions_owned", m.owned},
		{ns + "_partition_members", m.members},
		{ns + "_partitions_unowned", m.unowned},
		{ns + "_partition_oldest_unowned_seconds", m.oldest},
		{ns + "_partition_imbalance_ratio", m.imbalance},
		{ns + "_partition_moves_total", m.moves},
	})
}

// SetOwned sets the owned-partitions gauge of group.
func (m *PartitionMetrics) SetOwned(group string, owned int) {
	m.owned.WithLabelValues(group).Set(float64(owned))
}

// Moved increments the moves counter of group and reason.
func (m *PartitionMetrics) Moved(group string, reason partition.MoveReason) {
	m.moves.WithLabelValues(group, string(reason)).Inc()
}

// SetStats sets the members, unowned, oldest-unowned and imbalance gauges
// of group.
func (m *PartitionMetrics) SetStats(group string, s partition.Stats) {
	m.members.WithLabelValues(group).Set(float64(s.Members))
	m.unowned.WithLabelValues(group).Set(float64(s.Unowned))
	m.oldest.WithLabelValues(group).Set(s.OldestUnowned.Seconds())
	m.imbalance.WithLabelValues(group).Set(s.Imbalance)
}
