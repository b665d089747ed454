package postgres

import "fmt"

// groupNamesShapeSQL describes, for existing group tables ($1 the
// partitions table, $2 the members table), each column that names a group,
// a member or a partition (grp and name of the partitions table, grp and
// member of the members table) under which two different names could be
// one: a type other than pg_catalog's text or character varying (citext,
// name, which truncates, a domain), or a nondeterministic collation (a
// case-insensitive ICU one, say) on the column or on a unique index over
// it. It is NULL when there is none, or neither table exists. It rides the
// statement that looks up the group tables' owners (foreignGroupTablesSQL),
// so it costs no round trip: a few catalog rows read by index.
const groupNamesShapeSQL = `(SELECT pg_catalog.string_agg(pg_catalog.format('column %I of %s is %s', a.attname, c.relname,
        CASE WHEN a.atttypid OPERATOR(pg_catalog.=) ANY ('{pg_catalog.text,pg_catalog.varchar}'::pg_catalog.regtype[]::pg_catalog.oid[])
             THEN 'under a nondeterministic collation' ELSE pg_catalog.format_type(a.atttypid, a.atttypmod) END), '; ')
 FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) a.attrelid
 WHERE ((a.attrelid OPERATOR(pg_catalog.=) pg_catalog.to_regclass($1) AND a.attname OPERATOR(pg_catalog.=) ANY ('{grp,name}'::pg_catalog.name[]))
     OR (a.attrelid OPERATOR(pg_catalog.=) pg_catalog.to_regclass($2) AND a.attname OPERATOR(pg_catalog.=) ANY ('{grp,member}'::pg_catalog.name[])))
   AND NOT a.attisdropped
   AND (a.atttypid OPERATOR(pg_catalog.<>) ALL ('{pg_catalog.text,pg_catalog.varchar}'::pg_catalog.regtype[]::pg_catalog.oid[])
        OR EXISTS (SELECT 1 FROM pg_catalog.pg_collation co
                   WHERE NOT co.collisdeterministic
                     AND (co.oid OPERATOR(pg_catalog.=) a.attcollation
                          OR EXISTS (SELECT 1 FROM pg_catalog.pg_index i
                                     WHERE i.indrelid OPERATOR(pg_catalog.=) a.attrelid AND i.indisunique
                                       AND co.oid OPERATOR(pg_catalog.=) i.indcollation[pg_catalog.array_position(i.indkey::pg_catalog.int2[], a.attnum)])))))`

// groupNamesShapeError is the error for group tables whose name columns
// could make two names one (see groupNamesShapeSQL): groups "G" and "g"
// would share members and partitions.
func groupNamesShapeError(t groupTables, bad string) error {
	return fmt.Errorf("%w: group tables %s and %s: %s; under it names that differ (in case, say) could be one: want pg_catalog.text with the database's default collation", ErrTableShape, t.members, t.partitions, bad)
}
