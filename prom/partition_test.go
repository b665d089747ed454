package prom_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/memory"
	"github.com/tenure-dev/tenure/partition"
	"github.com/tenure-dev/tenure/prom"
)

// TestPartitionMetrics runs two members of a group on a memory coordinator
// with PartitionMetrics and reads the gauges and counters they set.
func TestPartitionMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewPedanticRegistry()
		m, err := prom.NewPartition(reg)
		if err != nil {
			t.Fatalf("NewPartition() error = %v", err)
		}
		c := memory.New()
		defer c.Close()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 2)
		for _, name := range []string{"a", "b"} {
			cfg := partition.DefaultConfig()
			cfg.Key, cfg.Partitions, cfg.Holder, cfg.Metrics = "jobs", 10, name, m
			cfg.TTL, cfg.Margin = 3*time.Second, 300*time.Millisecond
			g, err := partition.New(c, cfg)
			if err != nil {
				t.Fatalf("partition.New() error = %v", err)
			}
			go func() {
				done <- g.Run(ctx, func(ctx context.Context, _ partition.Partition, _ *tenure.Term) error {
					<-ctx.Done()
					return nil
				})
			}()
		}
		time.Sleep(5 * time.Second)
		// Both members set the same series (one registry stands for both
		// processes' scrapes): the last writer's value is read.
		if got := groupValue(t, reg, "tenure_partition_members", ""); got != 2 {
			t.Errorf("tenure_partition_members = %v; want 2", got)
		}
		if got := groupValue(t, reg, "tenure_partitions_unowned", ""); got != 0 {
			t.Errorf("tenure_partitions_unowned = %v; want 0", got)
		}
		if got := groupValue(t, reg, "tenure_partition_imbalance_ratio", ""); got != 1 {
			t.Errorf("tenure_partition_imbalance_ratio = %v; want 1 (5 of 10 each)", got)
		}
		if got := groupValue(t, reg, "tenure_partitions_owned", ""); got != 5 {
			t.Errorf("tenure_partitions_owned = %v; want 5", got)
		}
		if got := groupValue(t, reg, "tenure_partition_moves_total", "claimed"); got < 10 {
			t.Errorf(`tenure_partition_moves_total{reason="claimed"} = %v; want ≥ 10`, got)
		}
		cancel()
		<-done
		<-done
		if got := groupValue(t, reg, "tenure_partition_moves_total", "left"); got != 10 {
			t.Errorf(`tenure_partition_moves_total{reason="left"} = %v; want 10 after both left`, got)
		}
		if n, err := testutil.GatherAndCount(reg); err != nil || n == 0 {
			t.Errorf("GatherAndCount() = %d, %v; want series and no error", n, err)
		}
	})
}

// groupValue gathers reg and returns the value of the series of name for group
// "jobs" (and reason, when not empty).
func groupValue(t *testing.T, reg prometheus.Gatherer, name, reason string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather() error = %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["group"] != "jobs" || (reason != "" && labels["reason"] != reason) {
				continue
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no series %s{group=\"jobs\", reason=%q}", name, reason)
	return 0
}
