package postgres_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenure-dev/tenure/partition"
	"github.com/tenure-dev/tenure/partition/partitiontest"
)

// TestGroupConformance runs the partition group suite on PostgreSQL, each
// group member with its own pool, as separate processes would have. A
// partition is freed by hand as an operator would with SQL: an UPDATE that
// clears its owner.
func TestGroupConformance(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	partitiontest.Run(t, func(t *testing.T) partition.Coordinator {
		return open(t, dsn)
	}, partitiontest.WithTTL(2*time.Second), partitiontest.WithFreeByHand(func(t *testing.T, group, name string) {
		conn, err := pgx.Connect(ctxFor(t, 10*time.Second), dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(t.Context())
		tag, err := conn.Exec(ctxFor(t, 10*time.Second), `UPDATE cluster_leadership_partitions SET owner_epoch = NULL WHERE grp = $1 AND name = $2`, group, name)
		if err != nil || tag.RowsAffected() != 1 {
			t.Fatalf("free partition %s/%s by hand = %v, %v; want one row updated", group, name, tag, err)
		}
	}))
}
