package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tenure-dev/tenure/internal/inputs"
	"github.com/tenure-dev/tenure/internal/limits"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/tenure-dev/tenure"
)

// ListForeign returns the live rows of keys under prefix, sorted by key,
// that Acquire refuses but that no tenure grant wrote as they stand: no
// holder_id, a holder_id that is not a holder identity, a fencing_token
// that is not positive, or an expires_at more than a day ahead (infinity
// included). Their tokens are the rows' fencing_tokens. It lists too the
// partitions owned by a membership row that no member wrote as it stands
// or by a member of another group (see foreignPartitions), with the
// partition rows' tokens (a partition row naming a live member of its
// group is that member's, claimed or not: its partition.Group releases or
// claims it at its next read of the partition table), and, with
// Member set, those membership rows themselves, as records of their groups'
// keys whose tokens are the rows' epochs. Users free such a record with
// RemoveForeign. It is three statements.
func (c *Coordinator) ListForeign(ctx context.Context, prefix string) ([]tenure.ForeignRecord, error) {
	if err := inputs.Prefix(prefix); err != nil {
		return nil, fmt.Errorf("postgres: list foreign rows: %w", err)
	}
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	rows, err := c.pool.Query(ctx, `SELECT resource, holder_id, fencing_token, pg_catalog.isfinite(expires_at), `+leftMicros+`
FROM `+c.table+`
WHERE pg_catalog.starts_with(resource, $1) AND expires_at OPERATOR(pg_catalog.>) CURRENT_TIMESTAMP
ORDER BY resource COLLATE pg_catalog."C"`, prefix)
	if err != nil {
		return nil, fmt.Errorf("postgres: list foreign rows under %q: %w", prefix, err)
	}
	defer rows.Close()
	var out []tenure.ForeignRecord
	for rows.Next() {
		var key string
		var holder pgtype.Text
		var token int64
		var finite bool
		var leftUS int64
		if err := rows.Scan(&key, &holder, &token, &finite, &leftUS); err != nil {
			return nil, fmt.Errorf("postgres: list foreign rows under %q: %w", prefix, err)
		}
		if r, ok := foreignRow(key, holder, token, finite, leftUS); ok {
			out = append(out, r)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list foreign rows under %q: %w", prefix, err)
	}
	parts, err := c.foreignPartitions(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("postgres: list foreign partition owners under %q: %w", prefix, err)
	}
	out = append(out, parts...)
	members, err := c.foreignMemberRows(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("postgres: list foreign membership rows under %q: %w", prefix, err)
	}
	out = append(out, members...)
	slices.SortStableFunc(out, func(a, b tenure.ForeignRecord) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// leftMicros is the SQL for the time left on a live row's lease in µs, at
// most 9e15 (285 years: what a time.Duration holds). An expires_at of
// infinity, which no grant writes, reads as that too, instead of failing
// the statement ("cannot subtract infinite timestamps").
const leftMicros = `LEAST(CASE WHEN pg_catalog.isfinite(expires_at)
       THEN extract(epoch FROM expires_at OPERATOR(pg_catalog.-) CURRENT_TIMESTAMP) OPERATOR(pg_catalog.*) 1000000
       ELSE 9e15 END, 9e15)::bigint`

// foreignRow describes the live row of key when no tenure grant wrote it
// as it stands: finite is false when its expires_at is infinity, leftUS
// the time left on its lease.
func foreignRow(key string, holder pgtype.Text, token int64, finite bool, leftUS int64) (tenure.ForeignRecord, bool) {
	if tenure.ValidateKey(key) != nil {
		return tenure.ForeignRecord{}, false // no Acquire can name it
	}
	r := tenure.ForeignRecord{Key: key, Holder: holder.String, Token: uint64(token), TTL: -1}
	var why []string
	switch {
	case !holder.Valid:
		why = append(why, "no holder_id")
	case tenure.ValidateHolder(holder.String) != nil:
		why = append(why, "a holder_id that is not a holder identity")
	}
	if token <= 0 {
		why = append(why, fmt.Sprintf("fencing_token %d", token))
	}
	r.Malformed = len(why) > 0
	switch left := time.Duration(max(leftUS, 1)) * time.Microsecond; {
	case !finite:
		why = append(why, "an expires_at of infinity")
	case left > limits.MaxTTL:
		r.TTL = left
		why = append(why, "an expires_at more than a day ahead")
	default:
		r.TTL = left
	}
	r.Reason = strings.Join(why, ", ")
	return r, len(why) > 0
}

// malformedRow reports whether a row of holder (NULL read as "") and
// token is one no grant writes whatever its expires_at (see foreignRow).
func malformedRow(holder string, token int64) bool {
	return tenure.ValidateHolder(holder) != nil || token <= 0
}

// RemoveForeign ends r's lease if its row is still as r was read (the same
// holder_id, NULL read as "", and fencing_token, still live, and, unless
// that holder_id or fencing_token is one no grant writes, still ending
// more than a day ahead: a holder that renewed
// its own grant after someone pushed its expires_at out has a tenure grant
// again, which RemoveForeign leaves alone): it sets expires_at to
// -infinity, as Release does, and keeps the row and its token, so that the
// next Acquire's token, GREATEST(fencing_token + 1, the clock in µs), is
// greater than r's. It reports whether it did, and notifies watchers. For
// a partition owned by a membership row no member wrote, it deletes that
// row (see removeForeignMember) instead: every partition the row owns is
// freed; for a partition owned by a membership row of another group, it
// frees that partition alone; for a membership record (Member set), it deletes that row if it
// still has r's epoch and member and is still no member's. r is a record
// ListForeign returned; it is judged by what the statements compare, never
// by r.Malformed, so that a record naming a live grant or member, however
// it was made, removes nothing. "More than a day ahead" is measured from
// clock_timestamp(), read again when the statement waited on the row's
// lock: a renewal it waited on, whose statement started after
// RemoveForeign's, writes a day after a later moment than the statement's
// start, and is a tenure grant as it stands.
func (c *Coordinator) RemoveForeign(ctx context.Context, r tenure.ForeignRecord) (bool, error) {
	if err := tenure.ValidateKey(r.Key); err != nil {
		return false, fmt.Errorf("postgres: remove foreign row: %w", err)
	}
	if err := c.checkOpen(); err != nil {
		return false, err
	}
	if r.Member != "" {
		removed, err := c.removeForeignMemberRow(ctx, r)
		if err != nil {
			return false, fmt.Errorf("postgres: remove the foreign membership row %q of %q: %w", r.Member, r.Key, err)
		}
		return removed, nil
	}
	tag, err := c.pool.Exec(ctx, c.sql.removeForeign, r.Key, r.Holder, int64(r.Token), c.o.channel,
		malformedRow(r.Holder, int64(r.Token)), limits.MaxTTL.Microseconds())
	if err != nil {
		return false, fmt.Errorf("postgres: remove foreign row of %q: %w", r.Key, err)
	}
	if tag.RowsAffected() == 0 {
		removed, err := c.removeForeignMember(ctx, r)
		if err != nil {
			return false, fmt.Errorf("postgres: remove the foreign membership row owning %q: %w", r.Key, err)
		}
		return removed, nil
	}
	c.o.logger.Info("foreign row removed", "key", r.Key, "holder", r.Holder, "token", int64(r.Token), "reason", r.Reason)
	return true, nil
}
