package postgres_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/bench"
	"github.com/tenure-dev/tenure/partition"
	"github.com/tenure-dev/tenure/postgres"
)

// BenchmarkPartitions measures partition groups at P = 100 and P = 10,000
// with 10 members (each with its own pool) on PostgreSQL and prints the
// figures beside the targets:
//
//	go test -run '^$' -bench BenchmarkPartitions -benchtime 1x ./postgres/
//
// Writes are counted at the server: rows inserted, updated and deleted in
// the group tables (pg_stat_user_tables).
func BenchmarkPartitions(b *testing.B) {
	dsn := newDB(b)
	for range b.N {
		var small partition.Measured
		for _, p := range []int{100, 10000} {
			res, err := partition.Measure(context.Background(), partition.MeasureConfig{
				Partitions: p, Members: 10, TTL: 10 * time.Second,
				NewCoordinator: func(ctx context.Context) (tenure.Coordinator, error) {
					return postgres.Open(ctx, dsn)
				},
				Writes: func(ctx context.Context) (int64, error) { return bench.PostgresGroupWrites(ctx, dsn) },
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
			b.Logf("PostgreSQL, P=%d", p)
			res.Report(os.Stdout, 10*time.Second, ratio)
		}
	}
}
