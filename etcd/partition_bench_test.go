package etcd_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/etcd"
	"github.com/tenure-dev/tenure/internal/bench"
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
	eps := startEtcd(b)
	for range b.N {
		res, err := bench.Partitions(context.Background(), bench.PartitionsOptions{
			Partitions: 10000, Members: 10, TTL: 10 * time.Second, Reference: 100, Progress: os.Stdout,
			NewCoordinator: func(ctx context.Context) (tenure.Coordinator, error) {
				return etcd.New(newClient(b, eps))
			},
			Writes: bench.EtcdWrites,
		})
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("embedded etcd, P=10000 beside P=100")
		res.WriteText(os.Stdout, 10*time.Second)
	}
}
