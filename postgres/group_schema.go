package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// groupTables are the quoted names of the partition group tables, made from
// the leadership table's name: "<table>_members" and "<table>_partitions",
// in the same schema.
type groupTables struct {
	members, partitions string
	index               string // of members by group, unqualified
}

func (c *Coordinator) groupTables() (groupTables, error) {
	names := [3]string{c.o.table + "_members", c.o.table + "_partitions", c.o.table + "_members_grp"}
	var out [3]string
	for i, n := range names {
		if len(n) > maxIdentLen {
			return groupTables{}, fmt.Errorf("%w: group table %q (from WithTable %q) is %d bytes long; PostgreSQL identifiers are at most %d", ErrInvalidOption, n, c.o.table, len(n), maxIdentLen)
		}
		ident := pgx.Identifier{n}
		if c.o.schema != "" && i < 2 {
			ident = pgx.Identifier{c.o.schema, n}
		}
		out[i] = ident.Sanitize()
	}
	return groupTables{members: out[0], partitions: out[1], index: out[2]}, nil
}

// createGroupTablesSQL creates the group tables. A membership is one row,
// renewed by one UPDATE however many partitions it owns; a partition is
// owned while the row of its owner_epoch exists (expired rows are deleted
// by the next claim, under row locks, before it takes their partitions).
// tenure never deletes partition rows; tokens only grow even when someone
// else does, because a claim's token is never less than the database clock
// in microseconds (see clockMicros).
func createGroupTablesSQL(t groupTables) string {
	return `CREATE TABLE IF NOT EXISTS ` + t.members + ` (
	epoch      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	grp        pg_catalog.text NOT NULL,
	member     pg_catalog.text NOT NULL,
	ttl_us     bigint NOT NULL,
	expires_at pg_catalog.timestamptz NOT NULL,
	partitions integer,
	joined_grp pg_catalog.text
);
CREATE INDEX IF NOT EXISTS ` + t.index + ` ON ` + t.members + ` (grp);
CREATE TABLE IF NOT EXISTS ` + t.partitions + ` (
	grp           pg_catalog.text NOT NULL,
	name          pg_catalog.text NOT NULL,
	owner_epoch   bigint,
	fencing_token bigint NOT NULL,
	PRIMARY KEY (grp, name)
)`
}

// addMemberColumnsSQL adds to a members table made before they existed the
// columns where members record the partition count they announce and the
// group they joined (a row whose grp differs was moved by hand: see
// movedSQL).
func addMemberColumnsSQL(t groupTables) string {
	return `ALTER TABLE ` + t.members + ` ADD COLUMN IF NOT EXISTS partitions integer, ADD COLUMN IF NOT EXISTS joined_grp pg_catalog.text`
}

// ensureGroupTables creates the group tables if they do not exist, and adds
// the members' partitions and joined_grp columns to tables made before they
// existed, serialized on an advisory lock as ensureTable is.
func (c *Coordinator) ensureGroupTables(ctx context.Context, t groupTables) error {
	var exists, current, foreign bool
	var badNames pgtype.Text
	err := c.pool.QueryRow(ctx, `SELECT pg_catalog.to_regclass($1) IS NOT NULL,
       (SELECT pg_catalog.count(*) FROM pg_catalog.pg_attribute
        WHERE attrelid OPERATOR(pg_catalog.=) pg_catalog.to_regclass($2)
          AND attname OPERATOR(pg_catalog.=) ANY('{partitions,joined_grp}'::pg_catalog.name[]) AND NOT attisdropped) OPERATOR(pg_catalog.=) 2,
       `+foreignGroupTablesSQL+`, `+groupTablesShapeSQL, t.partitions, t.members, c.table).Scan(&exists, &current, &foreign, &badNames)
	if err == nil && foreign {
		return c.foreignGroupTablesError(t)
	}
	if err == nil && badNames.Valid {
		return groupTablesShapeError(t, badNames.String)
	}
	if err != nil || (exists && current) {
		return err
	}
	err = pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_catalog.pg_advisory_xact_lock($1, pg_catalog.hashtext($2))`, advisoryLockClass, t.partitions); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, createGroupTablesSQL(t)+";\n"+addMemberColumnsSQL(t))
		return err
	})
	if err != nil && exists {
		return fmt.Errorf("group table %s lacks column partitions or joined_grp (made by an older tenure), and adding them failed: %w; run as its owner: %s", t.members, err, addMemberColumnsSQL(t))
	}
	return err
}

// checkGroupTables returns foreignGroupTablesError when a group table
// exists and is another role's, and groupTablesShapeError when their name
// columns could make two names one. Every group operation runs it before its
// statements that read or write the group tables: they may have been
// dropped and made again by another role (one that may create tables in
// their schema) since this coordinator last used them, and a statement
// that reads or writes that role's tables runs its triggers, column
// defaults, rules and row security policies as this coordinator's role.
// Tables that do not exist pass: the statements find them missing.
func (c *Coordinator) checkGroupTables(ctx context.Context, t groupTables) error {
	return c.checkGroupTablesOn(ctx, c.pool, t)
}

// checkGroupTablesOn is checkGroupTables, its statement run on db.
func (c *Coordinator) checkGroupTablesOn(ctx context.Context, db Execer, t groupTables) error {
	var foreign bool
	var badNames pgtype.Text
	if err := db.QueryRow(ctx, `SELECT `+foreignGroupTablesSQL+`, `+groupTablesShapeSQL, t.partitions, t.members, c.table).Scan(&foreign, &badNames); err != nil {
		return fmt.Errorf("look up the owners of group tables %s and %s: %w", t.members, t.partitions, err)
	}
	if foreign {
		return c.foreignGroupTablesError(t)
	}
	if badNames.Valid {
		return groupTablesShapeError(t, badNames.String)
	}
	return nil
}

// foreignGroupTablesError is the error for group tables of another role.
func (c *Coordinator) foreignGroupTablesError(t groupTables) error {
	return fmt.Errorf("%w: group table %s or %s is owned by a role that is neither this one nor the owner of the leadership table %s; tenure does not use it (its owner's triggers, defaults and policies would run as this role)", ErrTableShape, t.members, t.partitions, c.table)
}

// foreignGroupTablesSQL is true when a group table ($1, $2) exists but is
// owned by a role that is neither the leadership table's ($3) owner nor
// this session's role (an exact match: before PostgreSQL 16 any role may
// grant itself to another, so membership proves nothing). Another role that
// may create tables in the schema (every role, in public, before
// PostgreSQL 15) could make them before the first member joins, and its
// triggers, column defaults, rules and row security policies would run as
// the role of every coordinator that writes or reads them.
const foreignGroupTablesSQL = `EXISTS (SELECT 1 FROM pg_catalog.pg_class g, pg_catalog.pg_class l
        WHERE l.oid OPERATOR(pg_catalog.=) pg_catalog.to_regclass($3)
          AND (g.oid OPERATOR(pg_catalog.=) pg_catalog.to_regclass($1) OR g.oid OPERATOR(pg_catalog.=) pg_catalog.to_regclass($2))
          AND g.relowner OPERATOR(pg_catalog.<>) l.relowner
          AND g.relowner OPERATOR(pg_catalog.<>) (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER))`

// acquirePartitionSQL acquires a key that names a partition ($5, $6: the
// group and the name) as the acquisition does ($1 to $4), if the
// partition's row has no owner. It writes the partition's row first (see
// Coordinator.acquirePartition); a row without owner gets the grant's
// token (greater than its own and the key's row's, and never less than the
// clock), so that either row alone still carries the key's last token when
// the other is deleted. It returns the new token (NULL when not granted), the notification, the
// row's owner epoch and token, and the owner's member and whether its
// membership is live (NULL and false when the snapshot has no row for it).
// An owner counts as live while the tables' shape ($7 to $9: see
// groupTablesShapeSQL) is not tenure's: the shape was checked by the
// statement before (acquireUnlessGroups), and a members table's
// expires_at altered in place since (to timestamp, from a session west of
// the server) would make a live owner look ended, and Acquire clear it.
func acquirePartitionSQL(table string, t groupTables, s statements) string {
	return `WITH p AS MATERIALIZED (
	INSERT INTO ` + t.partitions + ` AS p (grp, name, owner_epoch, fencing_token)
	VALUES ($5, $6, NULL, GREATEST(` + clockMicros + `,
	        coalesce((SELECT k.fencing_token FROM ` + table + ` AS k WHERE k.resource OPERATOR(pg_catalog.=) $1), 0) OPERATOR(pg_catalog.+) 1))
	ON CONFLICT (grp, name) DO UPDATE SET fencing_token = CASE WHEN p.owner_epoch IS NULL
	    THEN GREATEST(p.fencing_token OPERATOR(pg_catalog.+) 1, EXCLUDED.fencing_token) ELSE p.fencing_token END
	RETURNING p.owner_epoch, p.fencing_token
), o AS MATERIALIZED (
	SELECT m.member, (m.expires_at OPERATOR(pg_catalog.>) CURRENT_TIMESTAMP
	                  OR ` + groupTablesShapeAt(7) + ` IS NOT NULL) AS live
	FROM p JOIN ` + t.members + ` m ON m.epoch OPERATOR(pg_catalog.=) p.owner_epoch
	FOR SHARE OF m
), g AS (
	UPDATE ` + table + s.grantPartition + `
	  AND (SELECT owner_epoch FROM p) IS NULL
	RETURNING resource, fencing_token, ` + shapeColumns("") + `
)
SELECT (SELECT fencing_token FROM g), (SELECT ` + s.announce + ` FROM g),
       (SELECT owner_epoch FROM p), (SELECT fencing_token FROM p),
       (SELECT member FROM o), coalesce((SELECT live FROM o), false), ` + shapeOf("g")
}
