package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The seed's statements, the raw-SQL peer on PostgreSQL: verbatim but for
// the table name, the TTL (a parameter here, where the seed writes
// INTERVAL '15 seconds') and the renew and release statements the seed
// leaves implicit.
const (
	SeedTable   = `CREATE TABLE IF NOT EXISTS tenure_bench_seed (resource text PRIMARY KEY, holder_id text, fencing_token bigint NOT NULL DEFAULT 0, acquired_at timestamptz, expires_at timestamptz NOT NULL DEFAULT '-infinity')`
	SeedInsert  = `INSERT INTO tenure_bench_seed (resource) VALUES ($1) ON CONFLICT DO NOTHING`
	SeedAcquire = `UPDATE tenure_bench_seed
SET holder_id = $1, fencing_token = fencing_token + 1,
    acquired_at = CURRENT_TIMESTAMP, expires_at = CURRENT_TIMESTAMP + $3 * INTERVAL '1 millisecond'
WHERE resource = $2 AND (expires_at < CURRENT_TIMESTAMP OR holder_id = $1)
RETURNING fencing_token, expires_at`
	SeedRenew = `UPDATE tenure_bench_seed SET expires_at = CURRENT_TIMESTAMP + $4 * INTERVAL '1 millisecond'
WHERE resource = $1 AND holder_id = $2 AND fencing_token = $3 AND expires_at > CURRENT_TIMESTAMP`
	SeedRelease = `UPDATE tenure_bench_seed SET expires_at = '-infinity'
WHERE resource = $1 AND holder_id = $2 AND fencing_token = $3`
	// seedLeft is how long the lease on a key has left, on the database's
	// clock; no row when it has expired.
	seedLeft = `SELECT (extract(epoch FROM expires_at - clock_timestamp()) * 1000000)::bigint
FROM tenure_bench_seed WHERE resource = $1 AND expires_at > clock_timestamp()`
)

// Seed runs the seed's statements on a pool.
type Seed struct{ Pool *pgxpool.Pool }

// Setup creates the seed's table if it is missing and inserts rows for keys.
func (s Seed) Setup(ctx context.Context, keys ...string) error {
	if _, err := s.Pool.Exec(ctx, SeedTable); err != nil {
		return fmt.Errorf("bench: create the seed's table: %w", err)
	}
	for _, k := range keys {
		if _, err := s.Pool.Exec(ctx, SeedInsert, k); err != nil {
			return fmt.Errorf("bench: insert the seed's row %q: %w", k, err)
		}
	}
	return nil
}

// Acquire runs the seed's acquisition; ok is false when the key is held.
func (s Seed) Acquire(ctx context.Context, key, holder string, ttl time.Duration) (token int64, ok bool, err error) {
	var exp time.Time
	err = s.Pool.QueryRow(ctx, SeedAcquire, holder, key, ttl.Milliseconds()).Scan(&token, &exp)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("bench: seed acquire %q: %w", key, err)
	}
	return token, true, nil
}

// Renew runs the seed's renewal; ok is false when the lease is gone.
func (s Seed) Renew(ctx context.Context, key, holder string, token int64, ttl time.Duration) (bool, error) {
	tag, err := s.Pool.Exec(ctx, SeedRenew, key, holder, token, ttl.Milliseconds())
	if err != nil {
		return false, fmt.Errorf("bench: seed renew %q: %w", key, err)
	}
	return tag.RowsAffected() == 1, nil
}

// Release runs the seed's release.
func (s Seed) Release(ctx context.Context, key, holder string, token int64) error {
	if _, err := s.Pool.Exec(ctx, SeedRelease, key, holder, token); err != nil {
		return fmt.Errorf("bench: seed release %q: %w", key, err)
	}
	return nil
}
