package bench

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/etcd"
	"github.com/tenure-dev/tenure/partition"
)

// BenchmarkPartitionsEtcd measures partition groups at P = 100 and P = 10,000
// with 10 members on an embedded etcd member and prints the figures beside
// the targets:
//
//	go test -run '^$' -bench BenchmarkPartitionsEtcd -benchtime 1x ./cmd/internal/bench/
//
// Writes are counted at the server: raft proposals committed plus lease
// renewals (etcd's own metrics).
func BenchmarkPartitionsEtcd(b *testing.B) {
	srv, err := StartEtcd(b.Context(), b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close() })
	eps := srv.Endpoints()
	for range b.N {
		res, err := Partitions(context.Background(), PartitionsOptions{
			Partitions: 10000, Members: 10, TTL: 10 * time.Second, Reference: 100, Progress: os.Stdout,
			NewCoordinator: func(ctx context.Context) (partition.Coordinator, error) {
				return etcd.Dial(ctx, etcd.Config{Endpoints: eps, DialTimeout: 5 * time.Second})
			},
			Writes: EtcdWrites,
		})
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("embedded etcd, P=10000 beside P=100")
		res.WriteText(os.Stdout, 10*time.Second)
	}
}
