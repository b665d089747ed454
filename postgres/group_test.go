package postgres_test

import (
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/partition/partitiontest"
)

// TestGroupConformance runs the partition group suite on PostgreSQL, each
// group member with its own pool, as separate processes would have.
func TestGroupConformance(t *testing.T) {
	dsn := newDB(t)
	partitiontest.Run(t, func(t *testing.T) tenure.Coordinator {
		return open(t, dsn)
	}, partitiontest.WithTTL(2*time.Second))
}
