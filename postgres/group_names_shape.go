package postgres

import "fmt"

// groupNamesShapeSQL describes, for existing group tables ($1 the
// partitions table, $2 the members table), how two different names of a
// group, a member or a partition could be one: each column that names one
// (grp and name of the partitions table, grp and member of the members
// table) whose type is not pg_catalog's text or character varying (citext,
// name, which truncates, a domain) or whose collation is nondeterministic
// (a case-insensitive ICU one, say), and each unique index of the tables
// (the partitions' primary key) with a nondeterministic collation; and a
// members table whose expires_at is timestamptz of less than microsecond
// precision (type 1184), which rounds a membership's end up to half a
// unit early, before the member's own deadline. It is
// NULL when there is none, or neither table exists. It rides the statement
// that looks up the group tables' owners (foreignGroupTablesSQL), so it
// costs no round trip; it reads a few catalog rows, each by an index.
// Types 25 and 1043 are text and varchar (fixed OIDs of every PostgreSQL).
var groupNamesShapeSQL = `(SELECT pg_catalog.string_agg(bad, '; ') FROM (
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
	SELECT pg_catalog.format('unique index %I is under a nondeterministic collation', ic.relname)
	FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class ic ON ic.oid OPERATOR(pg_catalog.=) i.indexrelid
	WHERE i.indrelid OPERATOR(pg_catalog.=) ANY (ARRAY[pg_catalog.to_regclass($1), pg_catalog.to_regclass($2)]::pg_catalog.oid[]) AND i.indisunique
	  AND EXISTS (SELECT 1 FROM pg_catalog.generate_series(0, i.indnkeyatts OPERATOR(pg_catalog.-) 1) k
	              WHERE NOT ` + deterministic("i.indcollation[k]") + `)
) AS b(bad))`

// deterministic is whether the collation of oid expr tells every two
// different strings apart (true for no collation), read by the catalog's
// index on oid.
func deterministic(expr string) string {
	return `coalesce((SELECT co.collisdeterministic FROM pg_catalog.pg_collation co WHERE co.oid OPERATOR(pg_catalog.=) ` + expr + `), true)`
}

// groupNamesShapeError is the error for group tables whose name columns
// could make two names one (see groupNamesShapeSQL): groups "G" and "g"
// would share members and partitions; or whose members' expires_at rounds.
func groupNamesShapeError(t groupTables, bad string) error {
	return fmt.Errorf("%w: group tables %s and %s: %s: names that differ (in case, say) could be one, or a membership could end before its member's deadline; want text columns and indexes under the database's default collation, and an expires_at of timestamptz (microseconds)", ErrTableShape, t.members, t.partitions, bad)
}
