package bench

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/pgtest"
	"github.com/tenure-dev/tenure/partition"
	"github.com/tenure-dev/tenure/postgres"
)

// BenchmarkPartitionsPostgres measures partition groups at P = 100 and P = 10,000
// with 10 members (each with its own pool) on PostgreSQL and prints the
// figures beside the targets:
//
//	go test -run '^$' -bench BenchmarkPartitionsPostgres -benchtime 1x ./cmd/internal/bench/
//
// Writes are counted at the server: rows inserted, updated and deleted in
// the group tables (pg_stat_user_tables).
func BenchmarkPartitionsPostgres(b *testing.B) {
	dsn := pgtest.Need(b, pg.srv, pg.err).NewDatabase(b)
	for range b.N {
		res, err := Partitions(context.Background(), PartitionsOptions{
			Partitions: 10000, Members: 10, TTL: 10 * time.Second, Reference: 100, Progress: os.Stdout,
			NewCoordinator: func(ctx context.Context) (partition.Coordinator, error) {
				return postgres.Dial(ctx, dsn)
			},
			Writes:    func(ctx context.Context) (int64, error) { return PostgresGroupWrites(ctx, dsn) },
			WritesLag: PostgresGroupWritesLag,
		})
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("PostgreSQL, P=10000 beside P=100")
		res.WriteText(os.Stdout, 10*time.Second)
	}
}
