package postgres

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/tenure-dev/tenure/internal/inputs"
	"github.com/tenure-dev/tenure/internal/limits"
	"github.com/tenure-dev/tenure/partition"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tenure-dev/tenure"
)

var _ partition.Coordinator = (*Coordinator)(nil)

// JoinGroup inserts a membership row for id with a new epoch, a lease of ttl
// from now on the database's clock and the partition count announced,
// creating the group tables first if they do not exist, and notifies
// members' watchers (WatchMembers). See partition.Coordinator.
func (c *Coordinator) JoinGroup(ctx context.Context, group, id string, ttl time.Duration, partitions int) (partition.Member, error) {
	op := fmt.Sprintf("postgres: join group %q as %q", group, id)
	if err := inputs.Join(group, id, ttl, partitions); err != nil {
		return partition.Member{}, fmt.Errorf("%s: %w", op, err)
	}
	t, err := c.groupTables()
	if err != nil {
		return partition.Member{}, fmt.Errorf("%s: %w", op, err)
	}
	if err := c.checkOpen(); err != nil {
		return partition.Member{}, fmt.Errorf("%s: %w", op, err)
	}
	if err := c.ensureGroupTables(ctx, t); err != nil {
		return partition.Member{}, fmt.Errorf("%s: create tables: %w", op, err)
	}
	us, granted := micros(ttl)
	var epoch int64
	var sent tenure.Instant
	for attempt := 1; ; attempt++ {
		sent = tenure.Now()
		err = c.pool.QueryRow(ctx, joinSQL(t), group, id, us, c.o.channel, membersTopic(group), partitions).Scan(&epoch, nil)
		if err == nil || !(isUniqueViolation(err) || errors.Is(err, pgx.ErrNoRows)) || attempt == joinAttempts {
			break
		}
	}
	if errors.Is(err, pgx.ErrNoRows) { // see joinSQL
		return partition.Member{}, fmt.Errorf("%s: %d draws of an epoch each met a row one below the clock plus a day (written by hand?); try again", op, joinAttempts)
	}
	if err != nil {
		return partition.Member{}, fmt.Errorf("%s: %w", op, err)
	}
	return partition.Member{Group: group, ID: id, Epoch: uint64(epoch), TTL: granted, Sent: sent, Partitions: partitions}, nil
}

// joinAttempts is how many times JoinGroup inserts its row when another
// join took the same epoch at once (a unique violation).
const joinAttempts = 4

// joinSQL inserts a membership row and notifies members' watchers. Its
// epoch is drawn as tokens are: greater than every epoch of the members
// table and every owner_epoch of the partitions table, and never less than
// the database clock in microseconds (clockMicros). So an epoch is never
// reused, even after either table is truncated or dropped and re-created
// while members run: a partition row that names a gone membership's epoch
// never comes to name a new one. (The column's identity sequence, which
// TRUNCATE … RESTART IDENTITY or a re-created table would restart at 1, is
// not used.) Two joins that draw the same epoch at once collide on the
// primary key; the loser draws again.
//
// Epochs more than a day ahead of the clock (epochHorizon) are left out of
// that maximum: no join draws one (a draw exceeds the clock only by the
// joins drawn faster than one a microsecond), and one row written by hand
// at bigint's maximum would otherwise make every join of every group
// overflow. A draw is inserted only when it is below the clock plus a
// day, so it never equals an epoch left out either; when it would reach
// that bound (a row at exactly the clock plus a day minus one), nothing is
// inserted and JoinGroup draws again a moment later, past a bound that
// has moved on.
func joinSQL(t groupTables) string {
	return `WITH e AS MATERIALIZED (
	SELECT GREATEST(w.now_us,
	                (SELECT coalesce(pg_catalog.max(epoch), 0) OPERATOR(pg_catalog.+) 1 FROM ` + t.members + `
	                 WHERE epoch OPERATOR(pg_catalog.<) w.bound),
	                (SELECT coalesce(pg_catalog.max(owner_epoch), 0) OPERATOR(pg_catalog.+) 1 FROM ` + t.partitions + `
	                 WHERE owner_epoch OPERATOR(pg_catalog.<) w.bound)) AS epoch, w.bound
	FROM (SELECT c.now_us, c.now_us OPERATOR(pg_catalog.+) ` + epochHorizon + ` AS bound FROM (SELECT ` + clockMicros + ` AS now_us) c) w
), joined AS (
	INSERT INTO ` + t.members + ` (epoch, grp, member, ttl_us, expires_at, partitions, joined_grp) OVERRIDING SYSTEM VALUE
	SELECT e.epoch, $1, $2, $3::bigint, CURRENT_TIMESTAMP OPERATOR(pg_catalog.+) (` + microsInterval("$3") + `),
	       CASE WHEN $6::integer OPERATOR(pg_catalog.<>) 0 THEN $6::integer END, $1
	FROM e WHERE e.epoch OPERATOR(pg_catalog.<) e.bound
	RETURNING epoch)
SELECT epoch, pg_catalog.pg_notify($4, $5)::pg_catalog.text FROM joined`
}

// epochHorizon is how far ahead of the database clock, in µs, an epoch
// may be and still be one a join drew (limits.MaxTTL, a day): see joinSQL.
var epochHorizon = fmt.Sprint(limits.MaxTTL.Microseconds())

func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// beginGroup validates m and returns the group tables, checked with
// checkGroupTables. Group tables of another role cannot hold m (JoinGroup
// refuses them), so the error wraps tenure.ErrLost too.
func (c *Coordinator) beginGroup(ctx context.Context, op string, m partition.Member) (groupTables, error) {
	if err := inputs.Join(m.Group, m.ID, time.Second, 0); err != nil {
		return groupTables{}, fmt.Errorf("%s: %w", op, err)
	}
	if m.Epoch == 0 || m.Epoch > 1<<63-1 {
		return groupTables{}, fmt.Errorf("%s: %w: epoch %d", op, tenure.ErrInvalidGrant, m.Epoch)
	}
	t, err := c.groupTables()
	if err != nil {
		return groupTables{}, fmt.Errorf("%s: %w", op, err)
	}
	if err := c.checkOpen(); err != nil {
		return groupTables{}, fmt.Errorf("%s: %w", op, err)
	}
	if err := c.checkGroupTables(ctx, t); err != nil {
		if errors.Is(err, ErrTableShape) {
			return groupTables{}, fmt.Errorf("%s: %w: %w", op, tenure.ErrLost, err)
		}
		return groupTables{}, fmt.Errorf("%s: %w", op, err)
	}
	return t, nil
}

// RenewMember extends m's lease, and so all its partitions, by m.TTL (the
// TTL JoinGroup granted it, which it writes into the row's ttl_us again),
// with one UPDATE of its row, after a look at the group tables' owner (group tables
// another role made again are refused as lost). The extension, and the
// TTL it returns, come from m, never from the row: a ttl_us edited by hand
// would otherwise give the member a deadline its row does not keep, or a
// row more than a day ahead, which is no member's (see foreignMember). A
// row that expired or is gone is reported with an error
// wrapping tenure.ErrLost and never revived, and so is one no longer of
// m's group, ID and epoch, or moved from the group it joined (a row edited
// by hand: see movedSQL): as a single key's renewal, it
// extends from the statement's start but tests liveness again, against
// clock_timestamp(), once it holds the row's lock, so a renewal that waited
// on a lock past the lease's end finds it ended instead of reviving it after
// another holder took a partition's key.
func (c *Coordinator) RenewMember(ctx context.Context, m partition.Member) (partition.Member, error) {
	op := fmt.Sprintf("postgres: renew member %s", m)
	t, err := c.beginGroup(ctx, op, m)
	if err != nil {
		return partition.Member{}, err
	}
	if err := tenure.ValidateTTL(m.TTL); err != nil {
		return partition.Member{}, fmt.Errorf("%s: %w", op, err)
	}
	us, granted := micros(m.TTL)
	sent := tenure.Now()
	err = c.pool.QueryRow(ctx, `WITH locked AS MATERIALIZED (
	SELECT epoch, expires_at FROM `+t.members+` m
	WHERE epoch OPERATOR(pg_catalog.=) $1 AND member OPERATOR(pg_catalog.=) $2 AND grp OPERATOR(pg_catalog.=) $3
	  AND expires_at OPERATOR(pg_catalog.>) CURRENT_TIMESTAMP AND NOT `+movedSQL+`
	FOR NO KEY UPDATE OF m
)
UPDATE `+t.members+` AS m
SET expires_at = CURRENT_TIMESTAMP OPERATOR(pg_catalog.+) (`+microsInterval("$4")+`), ttl_us = $4
FROM locked AS k
WHERE m.epoch OPERATOR(pg_catalog.=) k.epoch AND k.expires_at OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp()
RETURNING m.epoch`, int64(m.Epoch), m.ID, m.Group, us).Scan(nil)
	if errors.Is(err, pgx.ErrNoRows) || isUndefinedTable(err) {
		return partition.Member{}, fmt.Errorf("%s: %w: membership expired or left", op, tenure.ErrLost)
	}
	if err != nil {
		return partition.Member{}, fmt.Errorf("%s: %w", op, err)
	}
	m.TTL, m.Sent = granted, sent
	return m, nil
}

// LeaveGroup deletes m's row: every partition it owned is free at once. It
// notifies members' watchers (WatchMembers).
func (c *Coordinator) LeaveGroup(ctx context.Context, m partition.Member) error {
	op := fmt.Sprintf("postgres: leave %s", m)
	t, err := c.beginGroup(ctx, op, m)
	if err != nil {
		return err
	}
	if _, err := c.pool.Exec(ctx, `WITH gone AS (DELETE FROM `+t.members+` WHERE epoch OPERATOR(pg_catalog.=) $1 AND member OPERATOR(pg_catalog.=) $2 RETURNING grp)
SELECT pg_catalog.pg_notify($3, $4) FROM gone`, int64(m.Epoch), m.ID, c.o.channel, membersTopic(m.Group)); err != nil && !isUndefinedTable(err) {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

func isUndefinedTable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42P01"
}

// GroupMembers returns group's live members with one query, each with the
// TTL it was granted, after a look at the group tables' owner (another
// role's are refused with ErrTableShape).
func (c *Coordinator) GroupMembers(ctx context.Context, group string) ([]partition.Member, error) {
	op := fmt.Sprintf("postgres: members of %q", group)
	t, err := c.beginObserve(ctx, op, group)
	if err != nil {
		return nil, err
	}
	// The partitions column is read through the row's JSON form, so that
	// a members table made by an older tenure (which JoinGroup would have
	// extended, but no member of this version may have joined yet) reads as
	// "nothing announced" instead of failing.
	rows, err := c.pool.Query(ctx, `SELECT member, epoch, ttl_us,
       coalesce((pg_catalog.to_jsonb(m) OPERATOR(pg_catalog.->>) 'partitions')::integer, 0),
       pg_catalog.isfinite(m.expires_at), `+memberLeftMicros+`, `+movedSQL+`
FROM `+t.members+` m WHERE grp OPERATOR(pg_catalog.=) $1 AND expires_at OPERATOR(pg_catalog.>) CURRENT_TIMESTAMP
ORDER BY member, epoch`, group)
	if isUndefinedTable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	var out []partition.Member
	var m partition.Member
	var epoch, us, leftUS int64
	var finite, moved bool
	_, err = pgx.ForEachRow(rows, []any{&m.ID, &epoch, &us, &m.Partitions, &finite, &leftUS, &moved}, func() error {
		if why, _ := foreignMember(m.ID, finite, leftUS, moved); why == "" { // else no member: see foreignPartitions
			m.Group, m.Epoch, m.TTL = group, uint64(epoch), time.Duration(us)*time.Microsecond
			out = append(out, m)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return out, nil
}

// beginObserve validates group and returns the group tables, checked with
// checkGroupTables.
func (c *Coordinator) beginObserve(ctx context.Context, op, group string) (groupTables, error) {
	if err := tenure.ValidateKey(group); err != nil {
		return groupTables{}, fmt.Errorf("%s: %w", op, err)
	}
	t, err := c.groupTables()
	if err != nil {
		return groupTables{}, fmt.Errorf("%s: %w", op, err)
	}
	if err := c.checkOpen(); err != nil {
		return groupTables{}, fmt.Errorf("%s: %w", op, err)
	}
	if err := c.checkGroupTables(ctx, t); err != nil {
		return groupTables{}, fmt.Errorf("%s: %w", op, err)
	}
	return t, nil
}

// GroupPartitions returns the live grants on group's partitions with one
// query, each with the time left on its owner's lease (a partition whose
// owner_epoch names a membership row of another group is left out: see
// foreignPartitions), after a look at the
// group tables' owner (another role's are refused with ErrTableShape).
func (c *Coordinator) GroupPartitions(ctx context.Context, group string) ([]tenure.Grant, error) {
	op := fmt.Sprintf("postgres: partitions of %q", group)
	t, err := c.beginObserve(ctx, op, group)
	if err != nil {
		return nil, err
	}
	rows, err := c.pool.Query(ctx, `SELECT p.name, m.member, p.fencing_token, pg_catalog.isfinite(m.expires_at), `+memberLeftMicros+`, `+movedSQL+`
FROM `+t.partitions+` p JOIN `+t.members+` m ON m.epoch OPERATOR(pg_catalog.=) p.owner_epoch
WHERE p.grp OPERATOR(pg_catalog.=) $1 AND m.grp OPERATOR(pg_catalog.=) $1 AND m.expires_at OPERATOR(pg_catalog.>) CURRENT_TIMESTAMP`, group)
	if isUndefinedTable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	var out []tenure.Grant
	var g tenure.Grant
	var name string
	var token, us int64
	var finite, moved bool
	_, err = pgx.ForEachRow(rows, []any{&name, &g.Holder, &token, &finite, &us, &moved}, func() error {
		if why, _ := foreignMember(g.Holder, finite, us, moved); why == "" { // else a foreign record: see foreignPartitions
			g.Key, g.Token, g.TTL = partition.Key(group, name), uint64(token), time.Duration(us)*time.Microsecond
			out = append(out, g)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}
