package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tenure-dev/tenure/internal/inputs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/tenure-dev/tenure"
)

// acquireOnce runs the acquisition statement. A key that cannot name a
// partition (no '/', or a part that is no group or partition name) needs
// nothing more. One that can ("group/name") is kept off a live partition
// so:
//
//   - While the group tables were not seen, the first attempt runs
//     acquireNoGroups: the acquisition, granted only if neither group
//     table exists, and only on the row version its snapshot read (see
//     acquireNoGroupsSQL). It says nothing of the tables: when it grants
//     nothing, Acquire reads the key's row, as for any acquisition that
//     grants nothing, and a row it finds free is tried again as below.
//   - Otherwise acquireUnlessGroups: one statement that grants the key only if
//     neither group table exists, and only on the row version its snapshot
//     read (see acquireUnlessGroupsSQL). It also tells whether the group
//     tables exist and whose they are: one without the other, or either
//     another role's, and the key is refused (halfGroupTables, ErrTableShape).
//   - When both exist and are the coordinator's, acquirePartition: one
//     statement more, that writes the partition's row and grants the key
//     only if no live member owns the partition.
//
// What acquireUnlessGroups saw is not kept for the next Acquire: the group
// tables can be dropped and made again by another role (one that may
// create tables in their schema) at any time, and a statement that writes
// that role's tables runs its triggers as this coordinator's role. It only
// picks the next Acquire's first statement (groupsSeen): both look at the
// tables themselves.
func (c *Coordinator) acquireOnce(ctx context.Context, key, holder string, us int64, first bool) (int64, error) {
	i := strings.LastIndexByte(key, '/')
	partition := i >= 0 && tenure.ValidateKey(key[:i]) == nil && inputs.PartitionName(key[i+1:]) == nil
	if !partition || c.sql.acquirePartition == "" {
		var token int64
		err := c.pool.QueryRow(ctx, c.sql.acquire, key, holder, us, c.o.channel).Scan(&token, nil)
		return token, err
	}
	t := c.groups
	if first && !c.groupsSeen.Load() {
		var token int64
		err := c.pool.QueryRow(ctx, c.sql.acquireNoGroups, key, holder, us, c.o.channel, t.partitions, t.members).Scan(&token, nil)
		return token, err
	}
	var token pgtype.Int8
	var partitions, members, foreign bool
	var badNames pgtype.Text
	err := c.pool.QueryRow(ctx, c.sql.acquireUnlessGroups, key, holder, us, c.o.channel, t.partitions, t.members, c.table).
		Scan(&token, nil, &partitions, &members, &foreign, &badNames)
	if err == nil {
		c.groupsSeen.Store(partitions || members)
	}
	switch {
	case err != nil:
		return 0, err
	case foreign:
		return 0, fmt.Errorf("%w: key %q can name partition %q of group %q, and group table %s or %s is owned by a role that is neither this one nor the owner of the leadership table %s: its members may own the partition, so tenure grants no such key here",
			ErrTableShape, key, key[i+1:], key[:i], t.members, t.partitions, c.table)
	case badNames.Valid:
		return 0, fmt.Errorf("key %q can name partition %q of group %q: %w", key, key[i+1:], key[:i], groupTablesShapeError(t, badNames.String))
	case partitions && members:
		token, err := c.acquirePartition(ctx, t, key, holder, us, key[:i], key[i+1:])
		if isUndefinedTable(err) { // dropped since; nothing was granted
			return 0, errRetry
		}
		return token, err
	case partitions || members:
		return 0, halfGroupTables(key, key[:i], key[i+1:], t, partitions)
	case !token.Valid:
		return 0, pgx.ErrNoRows // held, no row yet, or written since the snapshot: see Acquire
	}
	return token.Int64, nil
}

// halfGroupTables is the error for a key that can name a partition
// while one group table exists without the other (an admin dropped one).
// The key is granted only where its token is kept: in the partition's row
// too once that row's table exists (acquirePartition), which needs the
// members table to see whether the partition has an owner. Granted on its
// leadership row alone, its token could be lost with that row while the
// partition's row kept a smaller one, and the next grant repeat it.
func halfGroupTables(key, group, name string, t groupTables, partitions bool) error {
	there, gone := t.partitions, t.members
	if !partitions {
		there, gone = gone, there
	}
	return fmt.Errorf("%w: key %q can name partition %q of group %q, and group table %s exists without %s: tenure grants such a key only when both group tables exist or neither does; a member joining any group makes %s again, or drop %s too",
		ErrTableShape, key, name, group, there, gone, gone, there)
}

// acquireUnlessGroupsSQL is the acquisition ($1 to $4) of a key that can
// name a partition, given the group tables' names ($5, $6; the leadership
// table $7). It grants nothing when either exists (both:
// the key is acquired with acquirePartitionSQL; one: see halfGroupTables),
// or when either is another role's (see foreignGroupTablesSQL: that role's
// members may own the key's partition), and returns the new token (NULL
// when not granted), the notification, whether the partitions table and
// the members table exist, whether either is another role's, and how their
// name columns could make two names one (groupTablesShapeSQL; NULL if not).
//
// The tables are looked up when the statement starts, so a group made
// after that could claim the key's partition and commit before the UPDATE
// reaches the key's row, which it would then re-read (READ COMMITTED) and
// find free: a claim writes the key's leadership row (see claimKeys). So
// the UPDATE grants only the row version the statement's snapshot read
// (snapshotVersion): a row written since, by a claim or anyone, is not
// granted, and Acquire runs again; its next statement finds the tables. A
// claim that has not committed when the grant locks the row meets the
// grant (see claimKeys).
func acquireUnlessGroupsSQL(table string, s statements) string {
	params := strings.NewReplacer("$1", "$5", "$2", "$6", "$3", "$7")
	return `WITH s AS MATERIALIZED (
	SELECT pg_catalog.to_regclass($5) IS NOT NULL AS partitions, pg_catalog.to_regclass($6) IS NOT NULL AS members,
	       ` + params.Replace(foreignGroupTablesSQL) + ` AS other_role, ` + params.Replace(groupTablesShapeSQL) + ` AS bad_names
), g AS (
	UPDATE ` + table + ` AS l` + s.grant + `
	  AND NOT (SELECT partitions OR members OR other_role FROM s)
	  AND ` + snapshotVersion(table) + `
	RETURNING resource, fencing_token, ` + shapeColumns("l.") + `
)
SELECT (SELECT fencing_token FROM g), (SELECT ` + s.announce + ` FROM g), (SELECT partitions FROM s), (SELECT members FROM s), (SELECT other_role FROM s), (SELECT bad_names FROM s), ` + shapeOf("g")
}

// acquireNoGroupsSQL is the acquisition ($1 to $4) of a key that can name
// a partition, granted only if neither group table ($5, $6) exists, and
// only on the row version the statement's snapshot read, as
// acquireUnlessGroupsSQL grants it (whose argument holds here too: the
// tables are looked up before the UPDATE reads the key's row). It returns
// no row when it grants nothing, as the acquisition does, and does not say
// why. It looks at no owner: with neither table there, there is none to
// look at, and a plan that reads no catalog table is much cheaper
// (PostgreSQL locks and sets up every table a plan names each time it runs
// it, even one that a CASE never reaches).
func acquireNoGroupsSQL(table string, s statements) string {
	return `UPDATE ` + table + ` AS l` + s.grant + `
	  AND pg_catalog.to_regclass($5) IS NULL AND pg_catalog.to_regclass($6) IS NULL
	  AND ` + snapshotVersion(table) + `
RETURNING fencing_token, ` + s.announce + `, ` + shapeColumns("l.")
}

// snapshotVersion is the condition, on the row version l that an UPDATE
// of table is about to write, that it is the version the statement's
// snapshot sees. A version that another transaction committed after the
// snapshot was taken, which READ COMMITTED re-reads after waiting for
// that transaction (or finds when it reaches the row), lies at another
// place (ctid) in the table than the one the snapshot read, and the
// snapshot does not see it there: the subquery, run again on that
// version, finds no row. Unlike a second lookup of the key, it costs one
// fetch by ctid, not an index scan.
func snapshotVersion(table string) string {
	return `l.xmin OPERATOR(pg_catalog.=) (SELECT r.xmin FROM ` + table + ` AS r WHERE r.ctid OPERATOR(pg_catalog.=) l.ctid)`
}

// errRetry asks Acquire to run acquireOnce again: nothing is granted.
var errRetry = errors.New("postgres: run the acquisition again")

// acquirePartition acquires key, which names partition name of group, with
// acquirePartitionSQL: it writes the partition's row (inserting it,
// ownerless, if there is none), which locks it, and grants the key only if
// the row has no owner.
//
// A claim whose snapshot predates this write either committed first, when
// the write returns its owner's epoch, or meets the row's new version,
// which REPEATABLE READ refuses (SQLSTATE 40001), and its next run sees the
// grant. The owner's membership row is read FOR SHARE, so that a renewal
// in flight commits first (and is seen) or finds the lease ended. A
// membership row the statement's snapshot does not see was deleted, or
// inserted after the snapshot was taken (a member that joined and claimed
// meanwhile): it is read again. An owner whose membership is gone or has
// expired (for good: a renewal never revives it) is cleared from the row,
// and the key acquired again, as a partition without owner.
func (c *Coordinator) acquirePartition(ctx context.Context, t groupTables, key, holder string, us int64, group, name string) (int64, error) {
	var token, epoch, ptok pgtype.Int8
	var member pgtype.Text
	var live bool
	err := c.pool.QueryRow(ctx, c.sql.acquirePartition, key, holder, us, c.o.channel, group, name, t.partitions, t.members, c.table).
		Scan(&token, nil, &epoch, &ptok, &member, &live)
	switch {
	case err != nil || token.Valid:
		return token.Int64, err
	case !epoch.Valid:
		return 0, pgx.ErrNoRows // held by a single key, or no row yet: see Acquire
	case !member.Valid:
		err := c.pool.QueryRow(ctx, `SELECT member, expires_at OPERATOR(pg_catalog.>) CURRENT_TIMESTAMP OR `+groupTablesShapeAt(2)+` IS NOT NULL
FROM `+t.members+` WHERE epoch OPERATOR(pg_catalog.=) $1 FOR SHARE`, epoch.Int64, t.partitions, t.members, c.table).Scan(&member, &live)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return 0, fmt.Errorf("read the owner of partition %q of group %q: %w", name, group, err)
		}
	}
	if live {
		return 0, fmt.Errorf("partition %q of group %q is owned by member %q: %w", name, group, member.String, &tenure.HeldError{Key: key, Holder: member.String, Token: uint64(ptok.Int64)})
	}
	if _, err := c.pool.Exec(ctx, `UPDATE `+t.partitions+` SET owner_epoch = NULL
WHERE grp OPERATOR(pg_catalog.=) $1 AND name OPERATOR(pg_catalog.=) $2 AND owner_epoch OPERATOR(pg_catalog.=) $3`, group, name, epoch.Int64); err != nil {
		return 0, fmt.Errorf("clear the ended owner of partition %q of group %q: %w", name, group, err)
	}
	return 0, errRetry
}
