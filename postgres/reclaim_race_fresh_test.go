package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/grouprace"
	"github.com/tenure-dev/tenure/postgres"
)

// TestReclaimRaceFreshCoordinators is TestReclaimRace with every
// single-key Acquire of the partition's key ("race/g/0": a group with a '/')
// made by a new Coordinator, which has not seen the group tables: its
// Acquire of a row a single-key grant wrote last is the one statement that
// reads no partition row. At most one holder at a time; tokens never repeat
// or go back.
func TestReclaimRaceFreshCoordinators(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ b, x string }{{"b", "x"}, {"a", "a"}} {
		t.Run("b="+tc.b+",x="+tc.x, func(t *testing.T) {
			dsn := newDB(t)
			grouprace.ReclaimRace(t, open(t, dsn), open(t, dsn), freshAcquire{open(t, dsn)}, tc.b, tc.x, 300, false)
		})
	}
}

// freshAcquire acquires with a new Coordinator on the same pool each time;
// its other methods are its Coordinator's.
type freshAcquire struct{ *postgres.Coordinator }

func (f freshAcquire) Acquire(ctx context.Context, key, holder string, ttl time.Duration) (tenure.Grant, error) {
	c, err := postgres.New(ctx, f.Pool())
	if err != nil {
		return tenure.Grant{}, err
	}
	defer c.Close()
	return c.Acquire(ctx, key, holder, ttl)
}
