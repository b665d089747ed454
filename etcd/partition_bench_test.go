package etcd_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/etcd"
	"github.com/tenure-dev/tenure/partition"
)

// BenchmarkPartitions measures partition groups at P = 100 and P = 10,000
// with 10 members on an embedded etcd member and prints the figures beside
// the targets:
//
//	go test -run '^$' -bench BenchmarkPartitions -benchtime 1x ./etcd/
//
// Writes are counted at the server: raft proposals committed plus lease
// renewals (etcd's own metrics).
func BenchmarkPartitions(b *testing.B) {
	c := startCluster(b, 1)
	eps := c.endpoints()
	for range b.N {
		var small partition.Measured
		for _, p := range []int{100, 10000} {
			res, err := partition.Measure(context.Background(), partition.MeasureConfig{
				Partitions: p, Members: 10, TTL: 10 * time.Second,
				NewCoordinator: func(ctx context.Context) (tenure.Coordinator, error) {
					return etcd.New(newClient(b, eps))
				},
				Writes: etcdWrites,
			})
			if err != nil {
				b.Fatal(err)
			}
			ratio := 0.0
			if p == 100 {
				small = res
			} else if small.WritesPerSecond > 0 {
				ratio = res.WritesPerSecond / small.WritesPerSecond
			}
			b.Logf("embedded etcd, P=%d", p)
			res.Report(os.Stdout, 10*time.Second, ratio)
		}
	}
}

// etcdWrites sums the in-process etcd server's committed proposals and
// lease renewals.
func etcdWrites(context.Context) (int64, error) {
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		return 0, err
	}
	var n float64
	for _, mf := range mfs {
		switch mf.GetName() {
		case "etcd_server_proposals_committed_total", "etcd_debugging_lease_renewed_total":
			for _, m := range mf.GetMetric() {
				n += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return int64(n), nil
}
