package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/tenure-dev/tenure/internal/inputs"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/tenure-dev/tenure"
)

var _ tenure.Coordinator = (*Coordinator)(nil)

// List returns the live grants on every key under prefix, sorted by key,
// each with the time left on its lease on the database's clock. See
// tenure.Coordinator. It is one statement.
func (c *Coordinator) List(ctx context.Context, prefix string) ([]tenure.Grant, error) {
	if err := inputs.Prefix(prefix); err != nil {
		return nil, fmt.Errorf("postgres: list: %w", err)
	}
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	rows, err := c.pool.Query(ctx, `SELECT resource, holder_id, fencing_token, `+leftMicros+`
FROM `+c.table+`
WHERE pg_catalog.starts_with(resource, $1) AND expires_at OPERATOR(pg_catalog.>) CURRENT_TIMESTAMP
ORDER BY resource COLLATE pg_catalog."C"`, prefix)
	if err != nil {
		return nil, fmt.Errorf("postgres: list %q: %w", prefix, err)
	}
	defer rows.Close()
	var out []tenure.Grant
	for rows.Next() {
		var (
			key           string
			holder        pgtype.Text
			token, leftUS int64
		)
		if err := rows.Scan(&key, &holder, &token, &leftUS); err != nil {
			return nil, fmt.Errorf("postgres: list %q: %w", prefix, err)
		}
		if !holder.Valid {
			continue
		}
		out = append(out, tenure.Grant{Key: key, Holder: holder.String, Token: uint64(token), TTL: time.Duration(max(leftUS, 1)) * time.Microsecond})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list %q: %w", prefix, err)
	}
	return out, nil
}
