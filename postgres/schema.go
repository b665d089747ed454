package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// advisoryLockClass is the first key of the advisory lock that serializes
// concurrent creation of a leadership table ("tenu").
const advisoryLockClass = 0x74656e75

// leadershipColumns is the shape a leadership table must have: column name →
// accepted types as format_type spells them, and, for a column that must
// be NOT NULL, what a NULL there would break. No grant writes a NULL
// fencing_token or expires_at, and tenure cannot read one.
var leadershipColumns = []struct {
	name   string
	types  []string
	ifNull string // "" when the column may be NULL
}{
	{"resource", []string{"text", "character varying"}, ""}, // a NULL names no key: nothing reads it
	{"holder_id", []string{"text", "character varying"}, ""},
	{"fencing_token", []string{"bigint"}, "a live row without a token fails every read of its key, and ListForeign of every prefix above it"},
	{"acquired_at", []string{"timestamp with time zone"}, ""},
	{"expires_at", []string{"timestamp with time zone"}, "a row without an expiry is neither live nor free: its key is never granted, and ListForeign, which lists live rows, does not see it"},
}

// createTableSQL creates the leadership table named by the quoted name.
func createTableSQL(table string) string {
	return `CREATE TABLE IF NOT EXISTS ` + table + ` (
	resource      pg_catalog.text PRIMARY KEY,
	holder_id     pg_catalog.text,
	fencing_token bigint NOT NULL DEFAULT 0,
	acquired_at   pg_catalog.timestamptz,
	expires_at    pg_catalog.timestamptz NOT NULL DEFAULT '-infinity'
)`
}

// ensureTable creates the leadership table if it does not exist and checks
// its shape. It checks for the table before creating it, so that a role
// without CREATE on the schema can use a table made for it.
func (c *Coordinator) ensureTable(ctx context.Context) error {
	exists, err := tableExists(ctx, c.pool, c.table)
	if err != nil {
		return fmt.Errorf("postgres: look up table %s: %w", c.table, err)
	}
	if !exists {
		// CREATE TABLE IF NOT EXISTS alone can still fail when two sessions
		// race (a unique violation in pg_type): serialize on an advisory
		// lock held until commit.
		err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT pg_catalog.pg_advisory_xact_lock($1, pg_catalog.hashtext($2))`, advisoryLockClass, c.table); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, createTableSQL(c.table))
			return err
		})
		if err != nil {
			return fmt.Errorf("postgres: create table %s: %w", c.table, err)
		}
	}
	c.holderChars, err = checkTable(ctx, c.pool, c.table)
	return err
}

// checkTable checks the leadership table's owner and shape, and returns
// holder_id's length when it is a varchar(n) (see checkExactColumns).
func checkTable(ctx context.Context, db Execer, table string) (holderChars int, err error) {
	if err := checkLeadershipOwner(ctx, db, table); err != nil {
		return 0, err
	}
	if err := checkLeadershipShape(ctx, db, table); err != nil {
		return 0, err
	}
	if err := checkNoChildTables(ctx, db, table); err != nil {
		return 0, err
	}
	return checkExactColumns(ctx, db, table)
}

// checkExactColumns refuses a leadership table whose expires_at stores
// inexactly: less than microsecond precision (timestamptz(0)) rounds each
// lease's end to the nearest unit, which ends it up to half a unit before
// the holder's deadline, counted from its request's send time. It returns
// holder_id's length when it is a varchar(n) (0 when it has none): a
// longer holder is cut when its excess is spaces, and stored as another.
func checkExactColumns(ctx context.Context, db Execer, table string) (holderChars int, err error) {
	var precision, chars int32
	err = db.QueryRow(ctx, `SELECT
  coalesce((SELECT a.atttypmod FROM pg_catalog.pg_attribute a
            WHERE a.attrelid OPERATOR(pg_catalog.=) pg_catalog.to_regclass($1) AND a.attname OPERATOR(pg_catalog.=) 'expires_at'), -1),
  coalesce((SELECT a.atttypmod OPERATOR(pg_catalog.-) 4 FROM pg_catalog.pg_attribute a
            WHERE a.attrelid OPERATOR(pg_catalog.=) pg_catalog.to_regclass($1) AND a.attname OPERATOR(pg_catalog.=) 'holder_id'
              AND a.atttypid OPERATOR(pg_catalog.=) 'pg_catalog.varchar'::pg_catalog.regtype AND a.atttypmod OPERATOR(pg_catalog.>) 4), 0)`,
		table).Scan(&precision, &chars)
	if err != nil {
		return 0, fmt.Errorf("postgres: inspect table %s: %w", table, err)
	}
	if precision >= 0 && precision < 6 {
		return 0, fmt.Errorf("%w: table %s: column %q is timestamptz(%d), which rounds each lease's end, up to half a unit early; want timestamptz (microseconds)", ErrTableShape, table, "expires_at", precision)
	}
	return int(chars), nil
}

// checkNoChildTables refuses a leadership table with child tables
// (INHERITS), whose rows every statement on the table reads and writes
// too, each table enforcing its own uniqueness: a key can have two rows. A
// grant writes every row of its key and a release ends one, so two holders
// could each hold a row of one key. (A partitioned table's unique index
// covers its partitions.)
func checkNoChildTables(ctx context.Context, db Execer, table string) error {
	var children bool
	err := db.QueryRow(ctx, `SELECT c.relkind OPERATOR(pg_catalog.=) 'r'
  AND EXISTS (SELECT 1 FROM pg_catalog.pg_inherits h WHERE h.inhparent OPERATOR(pg_catalog.=) c.oid)
FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) pg_catalog.to_regclass($1)`, table).Scan(&children)
	if err != nil {
		return fmt.Errorf("postgres: inspect table %s: %w", table, err)
	}
	if children {
		return fmt.Errorf("%w: table %s has child tables (INHERITS), whose rows tenure's statements would read and write as the table's, so a key can have two rows: detach them (ALTER TABLE … NO INHERIT %s)", ErrTableShape, table, table)
	}
	return nil
}

// checkLeadershipOwner refuses a leadership table whose owner is not a
// role that could drop and replace it anyway: this session's role (an
// exact match: before PostgreSQL 16 any role may grant itself to another,
// so membership proves nothing), the schema's owner, the database's owner
// or a superuser. Another role that may create tables in the schema (every
// role, in public, before PostgreSQL 15) could make the table before
// tenure's first run, and its triggers, column defaults, rules and row
// security policies would run as the role of every coordinator that reads
// or writes it. The group tables trust the leadership table's owner (see
// foreignGroupTablesSQL).
func checkLeadershipOwner(ctx context.Context, db Execer, table string) error {
	var owner string
	var trusted bool
	err := db.QueryRow(ctx, `SELECT pg_catalog.pg_get_userbyid(c.relowner)::pg_catalog.text,
       c.relowner OPERATOR(pg_catalog.=) ANY (ARRAY[
           (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER), n.nspowner,
           (SELECT d.datdba FROM pg_catalog.pg_database d WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())])
       OR coalesce((SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.oid OPERATOR(pg_catalog.=) c.relowner), false)
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
WHERE c.oid OPERATOR(pg_catalog.=) pg_catalog.to_regclass($1)`, table).Scan(&owner, &trusted)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("%w: table %s does not exist", ErrTableShape, table)
	case err != nil:
		return fmt.Errorf("postgres: look up the owner of table %s: %w", table, err)
	case !trusted:
		return fmt.Errorf("%w: table %s is owned by role %q, which is neither this role, the schema's owner, the database's owner nor a superuser; tenure does not use it (its owner's triggers, defaults, rules and policies would run as this role): drop it, or give it to the schema's owner (ALTER TABLE %s OWNER TO …)",
			ErrTableShape, table, owner, table)
	}
	return nil
}

// tableExists reports whether the quoted, possibly qualified name resolves
// to a relation.
func tableExists(ctx context.Context, db Execer, table string) (bool, error) {
	var oid pgtype.Uint32
	if err := db.QueryRow(ctx, `SELECT pg_catalog.to_regclass($1)::pg_catalog.oid`, table).Scan(&oid); err != nil {
		return false, err
	}
	return oid.Valid, nil
}

// column is one column of a table as the catalog describes it.
type column struct {
	name, typ        string
	notNull, hasDef  bool
	uniqueSingleCol  bool // a valid, immediate, unique, non-partial index on this column alone
	identity, genrtd bool
	deterministic    bool // its collation, and that of every unique index it leads, tells every two different strings apart
}

// relation is what the catalog says of a table besides its columns.
type relation struct {
	kind      string // pg_class.relkind
	temporary bool   // a temporary table: each session's own
}

// unusable says why rel cannot be the leadership table, or "".
func (rel relation) unusable() string {
	switch {
	case rel.kind != "r" && rel.kind != "p":
		return fmt.Sprintf("is not a table (relkind %q)", rel.kind)
	case rel.temporary:
		return "is a temporary table (schema pg_temp), each session's own: two connections would each grant a key from a table of their own; want a table of a permanent schema (WithSchema)"
	}
	return ""
}

// columns describes the table with the quoted name, and its columns.
func columns(ctx context.Context, db Execer, table string) (rel relation, cols map[string]column, err error) {
	if err := db.QueryRow(ctx, `SELECT relkind::pg_catalog.text, relpersistence OPERATOR(pg_catalog.=) 't' FROM pg_catalog.pg_class WHERE oid OPERATOR(pg_catalog.=) pg_catalog.to_regclass($1)`, table).Scan(&rel.kind, &rel.temporary); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return rel, nil, fmt.Errorf("%w: table %s does not exist", ErrTableShape, table)
		}
		return rel, nil, err
	}
	rows, err := db.Query(ctx, `
SELECT a.attname, pg_catalog.format_type(a.atttypid, NULL),
       (SELECT n.nspname FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) t.typnamespace
        WHERE t.oid OPERATOR(pg_catalog.=) a.atttypid),
       a.attnotnull, a.atthasdef,
       a.attidentity OPERATOR(pg_catalog.<>) '' OR a.attgenerated OPERATOR(pg_catalog.<>) '',
       EXISTS (SELECT 1 FROM pg_catalog.pg_index i
               WHERE i.indrelid OPERATOR(pg_catalog.=) a.attrelid AND i.indisunique AND i.indpred IS NULL
                 AND i.indisvalid AND i.indimmediate AND i.indnkeyatts OPERATOR(pg_catalog.=) 1 AND i.indkey[0] OPERATOR(pg_catalog.=) a.attnum),
       NOT EXISTS (SELECT 1 FROM pg_catalog.pg_collation co
                   WHERE NOT co.collisdeterministic
                     AND (co.oid OPERATOR(pg_catalog.=) a.attcollation
                          OR EXISTS (SELECT 1 FROM pg_catalog.pg_index i
                                     WHERE i.indrelid OPERATOR(pg_catalog.=) a.attrelid AND i.indisunique
                                       AND i.indkey[0] OPERATOR(pg_catalog.=) a.attnum
                                       AND i.indcollation[0] OPERATOR(pg_catalog.=) co.oid)))
FROM pg_catalog.pg_attribute a
WHERE a.attrelid OPERATOR(pg_catalog.=) pg_catalog.to_regclass($1) AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped`, table)
	if err != nil {
		return rel, nil, err
	}
	cols = map[string]column{}
	for rows.Next() {
		var c column
		var auto bool
		var schema string
		if err := rows.Scan(&c.name, &c.typ, &schema, &c.notNull, &c.hasDef, &auto, &c.uniqueSingleCol, &c.deterministic); err != nil {
			rows.Close()
			return rel, nil, err
		}
		c.typ = typeName(c.typ, schema)
		c.identity = auto
		cols[c.name] = c
	}
	return rel, cols, rows.Err()
}

// typeName is the name of a column's type as format_type spells it when
// the search_path finds it: "text" for pg_catalog's text however the
// search_path finds it, a type of another schema qualified ("app.text"),
// so that another schema's type never reads as pg_catalog's.
func typeName(formatted, schema string) string {
	if schema == "pg_catalog" {
		return strings.TrimPrefix(formatted, "pg_catalog.")
	}
	if strings.HasPrefix(formatted, pgx.Identifier{schema}.Sanitize()+".") || strings.HasPrefix(formatted, schema+".") {
		return formatted
	}
	return pgx.Identifier{schema}.Sanitize() + "." + formatted
}

// rowSecurity reports a leadership table with row security enabled
// (forced or not: tenure's role may own it or not), under which a policy
// could hide a live grant's row from tenure's statements, and its key be
// granted again.
func rowSecurity(ctx context.Context, db Execer, table string) error {
	var rls bool
	if err := db.QueryRow(ctx, `SELECT relrowsecurity FROM pg_catalog.pg_class WHERE oid OPERATOR(pg_catalog.=) pg_catalog.to_regclass($1)`, table).Scan(&rls); err != nil {
		return fmt.Errorf("postgres: inspect table %s: %w", table, err)
	}
	if rls {
		return fmt.Errorf("%w: table %s: has row security enabled, under which a policy can hide a live grant's row from tenure's statements, and its key be granted again; want it disabled (ALTER TABLE %s DISABLE ROW LEVEL SECURITY)", ErrTableShape, table, table)
	}
	return nil
}

// checkLeadershipShape reports, naming the table and each column, how an
// existing leadership table differs from what the coordinator needs.
func checkLeadershipShape(ctx context.Context, db Execer, table string) error {
	rel, cols, err := columns(ctx, db, table)
	if err != nil {
		if errors.Is(err, ErrTableShape) {
			return err
		}
		return fmt.Errorf("postgres: inspect table %s: %w", table, err)
	}
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: table %s: "+format, append([]any{ErrTableShape, table}, args...)...))
	}
	if why := rel.unusable(); why != "" {
		bad("%s", why)
		return errors.Join(errs...)
	}
	errs = append(errs, rowSecurity(ctx, db, table))
	known := map[string]bool{}
	for _, want := range leadershipColumns {
		known[want.name] = true
		col, ok := cols[want.name]
		if !ok {
			bad("column %q is missing (want %s)", want.name, want.types[0])
			continue
		}
		okType := false
		for _, t := range want.types {
			okType = okType || col.typ == t
		}
		if !okType {
			why := ""
			if strings.HasPrefix(col.typ, "timestamp without") {
				why = ": its meaning would depend on each session's time zone"
			}
			bad("column %q is %s; want %s%s", want.name, col.typ, strings.Join(want.types, " or "), why)
		}
		if want.ifNull != "" && !col.notNull {
			bad("column %q may be NULL, which no grant writes (%s); want NOT NULL (ALTER TABLE %s ALTER COLUMN %s SET NOT NULL)", want.name, want.ifNull, table, want.name)
		}
	}
	if col, ok := cols["resource"]; ok && !col.uniqueSingleCol {
		bad("column %q has no unique index (want PRIMARY KEY or UNIQUE on it alone, valid and not deferrable: an index CREATE INDEX CONCURRENTLY left invalid is not enforced, so a key could have two rows; REINDEX it once the column is unique)", "resource")
	}
	if col, ok := cols["resource"]; ok && !col.deterministic {
		bad("column %q or a unique index on it has a nondeterministic collation, under which keys that differ (in case, say) are one row; want the database's default collation", "resource")
	}
	// A holder may acquire its own key again: under such a collation two
	// holders ("Node-1" and "node-1") are one, and the second would be
	// granted the first's live key.
	if col, ok := cols["holder_id"]; ok && !col.deterministic {
		bad("column %q has a nondeterministic collation, under which different holders (that differ in case, say) are one, and one would be granted the other's live key; want the database's default collation", "holder_id")
	}
	for name, col := range cols {
		if !known[name] && col.notNull && !col.hasDef && !col.identity {
			bad("column %q is NOT NULL without a default, so new keys' rows cannot be inserted", name)
		}
	}
	return errors.Join(errs...)
}
