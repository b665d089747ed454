package etcd_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/etcd"
	"github.com/tenure-dev/tenure/internal/bench"
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
				Writes: bench.EtcdWrites,
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
