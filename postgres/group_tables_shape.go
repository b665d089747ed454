package postgres

import (
	"fmt"
	"strings"
)

// groupTablesShapeSQL describes, for existing group tables ($1 the
// partitions table, $2 the members table), how they differ from what
// tenure's statements need:
//
//   - how two different names of a group, a member or a partition could be
//     one: each column that names one (grp and name of the partitions
//     table, grp and member of the members table) whose type is not
//     pg_catalog's text or character varying (citext, name, which
//     truncates, a domain) or whose collation is nondeterministic (a
//     case-insensitive ICU one, say), and each unique index of the tables
//     (the partitions' primary key) with a nondeterministic collation;
//   - a members table whose expires_at is timestamptz of less than
//     microsecond precision (type 1184), which rounds a membership's end up
//     to half a unit early, before the member's own deadline;
//   - each column the statements read that is missing, of another type, or
//     may be NULL where tenure never writes NULL (a membership row with a
//     NULL expires_at is neither live nor expired: it would own its
//     partitions for ever, unseen); and a members epoch without a unique
//     index of its own (valid, not deferrable, not partial): every
//     statement takes an epoch for one membership, so a second row of
//     another group with a live member's epoch would have RemoveForeign
//     free that member's partitions, and another member claim them;
//   - a table with row security enabled (forced or not: tenure's role may
//     be its owner or not), under which a policy could hide a live
//     membership, and Acquire or a claim take its partitions;
//   - in the leadership table ($3), which a claim reads to see whether a
//     partition's key is held as a single key, and which New checked when
//     the coordinator was made but which may have been altered in place
//     since: an expires_at that is not timestamptz of microseconds (a
//     timestamp converted in place from a session west of the server
//     stores each lease's end hours early), a holder_id that is not text
//     or varchar under a deterministic collation, or row security.
//
// It is NULL when there is none, or no table exists. It rides the statement
// that looks up the group tables' owners (foreignGroupTablesSQL), so it
// costs no round trip; it reads a few catalog rows, each by an index.
// Types 20, 25, 1043 and 1184 are bigint, text, varchar and timestamptz
// (fixed OIDs of every PostgreSQL).
var groupTablesShapeSQL = `(SELECT pg_catalog.string_agg(bad, '; ') FROM (
	SELECT pg_catalog.format('column %I of %I is %s', a.attname, c.relname,
	       CASE WHEN a.atttypid OPERATOR(pg_catalog.=) ANY ('{25,1043}'::pg_catalog.oid[])
	            THEN 'under a nondeterministic collation' ELSE pg_catalog.format_type(a.atttypid, a.atttypmod) END)
	FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) a.attrelid
	WHERE ((a.attrelid OPERATOR(pg_catalog.=) pg_catalog.to_regclass($1) AND a.attname OPERATOR(pg_catalog.=) ANY ('{grp,name}'::pg_catalog.name[]))
	    OR (a.attrelid OPERATOR(pg_catalog.=) pg_catalog.to_regclass($2) AND a.attname OPERATOR(pg_catalog.=) ANY ('{grp,member}'::pg_catalog.name[])))
	  AND NOT a.attisdropped
	  AND (a.atttypid OPERATOR(pg_catalog.<>) ALL ('{25,1043}'::pg_catalog.oid[]) OR NOT ` + deterministic("a.attcollation") + `)
	UNION ALL
	SELECT pg_catalog.format('column %I of %I is %s, which rounds each membership''s end, up to half a unit early', a.attname, c.relname,
	       pg_catalog.format_type(a.atttypid, a.atttypmod))
	FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) a.attrelid
	WHERE a.attrelid OPERATOR(pg_catalog.=) pg_catalog.to_regclass($2) AND a.attname OPERATOR(pg_catalog.=) 'expires_at' AND NOT a.attisdropped
	  AND a.atttypid OPERATOR(pg_catalog.=) 1184 AND a.atttypmod OPERATOR(pg_catalog.>=) 0 AND a.atttypmod OPERATOR(pg_catalog.<) 6
	UNION ALL
	SELECT pg_catalog.format('column %I of %I %s', w.col, c.relname, CASE
	       WHEN a.attnum IS NULL THEN 'is missing'
	       WHEN w.typ OPERATOR(pg_catalog.<>) 0 AND a.atttypid OPERATOR(pg_catalog.<>) w.typ
	       THEN pg_catalog.format('is %s; want %s', pg_catalog.format_type(a.atttypid, a.atttypmod), pg_catalog.format_type(w.typ, NULL))
	       WHEN w.not_null AND NOT a.attnotnull THEN 'may be NULL, which no member writes; want NOT NULL'
	       ELSE 'has no unique index of its own (want PRIMARY KEY, valid and not deferrable): two membership rows could share an epoch, and one of them free the other''s partitions' END)
	FROM (VALUES (1, 'grp'::pg_catalog.name, 0::pg_catalog.oid, true, false), (1, 'name', 0, true, false),
	             (1, 'owner_epoch', 20, false, false), (1, 'fencing_token', 20, true, false),
	             (2, 'epoch', 20, true, true), (2, 'grp', 0, true, false), (2, 'member', 0, true, false),
	             (2, 'ttl_us', 20, true, false), (2, 'expires_at', 1184, true, false)) AS w(tbl, col, typ, not_null, uniq)
	JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) (ARRAY[pg_catalog.to_regclass($1), pg_catalog.to_regclass($2)]::pg_catalog.oid[])[w.tbl]
	LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) c.oid AND a.attname OPERATOR(pg_catalog.=) w.col AND NOT a.attisdropped
	WHERE a.attnum IS NULL
	   OR (w.typ OPERATOR(pg_catalog.<>) 0 AND a.atttypid OPERATOR(pg_catalog.<>) w.typ)
	   OR (w.not_null AND NOT a.attnotnull)
	   OR (w.uniq AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_index i
	                              WHERE i.indrelid OPERATOR(pg_catalog.=) c.oid AND i.indisunique AND i.indpred IS NULL AND i.indisvalid
	                                AND i.indimmediate AND i.indnkeyatts OPERATOR(pg_catalog.=) 1 AND i.indkey[0] OPERATOR(pg_catalog.=) a.attnum))
	UNION ALL
	SELECT pg_catalog.format('unique index %I is under a nondeterministic collation', ic.relname)
	FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class ic ON ic.oid OPERATOR(pg_catalog.=) i.indexrelid
	WHERE i.indrelid OPERATOR(pg_catalog.=) ANY (ARRAY[pg_catalog.to_regclass($1), pg_catalog.to_regclass($2)]::pg_catalog.oid[]) AND i.indisunique
	  AND EXISTS (SELECT 1 FROM pg_catalog.generate_series(0, i.indnkeyatts OPERATOR(pg_catalog.-) 1) k
	              WHERE NOT ` + deterministic("i.indcollation[k]") + `)
	UNION ALL
	SELECT pg_catalog.format('column %I of %I is %s', a.attname, c.relname,
	       CASE WHEN a.atttypid OPERATOR(pg_catalog.=) ANY ('{25,1043}'::pg_catalog.oid[])
	            THEN 'under a nondeterministic collation' ELSE pg_catalog.format_type(a.atttypid, a.atttypmod) END)
	FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) a.attrelid
	WHERE a.attrelid OPERATOR(pg_catalog.=) pg_catalog.to_regclass($3) AND NOT a.attisdropped
	  AND ((a.attname OPERATOR(pg_catalog.=) 'expires_at'
	        AND (a.atttypid OPERATOR(pg_catalog.<>) 1184 OR a.atttypmod OPERATOR(pg_catalog.>=) 0 AND a.atttypmod OPERATOR(pg_catalog.<) 6))
	    OR (a.attname OPERATOR(pg_catalog.=) 'holder_id'
	        AND (a.atttypid OPERATOR(pg_catalog.<>) ALL ('{25,1043}'::pg_catalog.oid[]) OR NOT ` + deterministic("a.attcollation") + `)))
	UNION ALL
	SELECT pg_catalog.format('%I has row security enabled, under which a policy can hide a live row from tenure''s statements', c.relname)
	FROM pg_catalog.pg_class c
	WHERE c.oid OPERATOR(pg_catalog.=) ANY (ARRAY[pg_catalog.to_regclass($1), pg_catalog.to_regclass($2), pg_catalog.to_regclass($3)]::pg_catalog.oid[])
	  AND c.relrowsecurity
) AS b(bad))`

// deterministic is whether the collation of oid expr tells every two
// different strings apart (true for no collation), read by the catalog's
// index on oid.
func deterministic(expr string) string {
	return `coalesce((SELECT co.collisdeterministic FROM pg_catalog.pg_collation co WHERE co.oid OPERATOR(pg_catalog.=) ` + expr + `), true)`
}

// groupTablesShapeError is the error for group tables of another shape
// than tenure's (see groupTablesShapeSQL), naming each difference.
func groupTablesShapeError(t groupTables, bad string) error {
	return fmt.Errorf("%w: group tables %s and %s, or the leadership table: %s; want the shape tenure creates (docs/postgresql.md): text names under the database's default collation, an epoch that is the members' primary key, NOT NULL columns, an expires_at of timestamptz (microseconds), and no row security", ErrTableShape, t.members, t.partitions, bad)
}

// groupTablesShapeAt is groupTablesShapeSQL with its parameters numbered
// from $n on, for a statement whose own come first. The statements that
// act on a membership's expiry in the unsafe direction (a claim's
// deletion of expired memberships, an Acquire's clearing of an ended
// owner) carry it, because the look at the shape before them is a
// statement of its own, and a members table's expires_at altered in
// place since (to timestamp, from a session west of the server) would
// make live memberships look ended: a shape that is not tenure's deletes
// nothing, and counts every owner live.
func groupTablesShapeAt(n int) string {
	return strings.NewReplacer("$1", fmt.Sprintf("$%d", n), "$2", fmt.Sprintf("$%d", n+1), "$3", fmt.Sprintf("$%d", n+2)).Replace(groupTablesShapeSQL)
}
