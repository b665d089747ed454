package postgres_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenure-dev/tenure"
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
				Writes: func(ctx context.Context) (int64, error) { return pgWrites(ctx, dsn) },
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

// pgWrites sums the rows written to the group tables, as the server counts
// them.
func pgWrites(ctx context.Context, dsn string) (int64, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int64
	err = conn.QueryRow(ctx, `SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)::bigint
FROM pg_stat_user_tables WHERE relname IN ('cluster_leadership_members', 'cluster_leadership_partitions')`).Scan(&n)
	return n, err
}
