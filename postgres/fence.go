package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tenure-dev/tenure/fence"
)

// DefaultTokenColumn is the column that holds a fenced row's token.
const DefaultTokenColumn = "fencing_token"

// A FenceGuard protects the rows of one table with fencing tokens, with the
// resource-side statement:
//
//	UPDATE <Table> SET <set…>, <TokenColumn> = $token [, <UpdatedAtColumn> = CURRENT_TIMESTAMP]
//	WHERE <IDColumn> OPERATOR(pg_catalog.=) $id AND <TokenColumn> OPERATOR(pg_catalog.<=) $token
//
// A row accepts a token equal to or newer than the newest it has accepted,
// and records it; an older one changes nothing and is reported as a
// *fence.StaleError. All names are quoted identifiers and all values are
// parameters: nothing is spliced into the SQL text unquoted. The = and <=
// are pg_catalog's whatever the session's search_path, so no role that may
// create objects on it can replace the comparisons; the ID column's type
// must therefore have its equality in pg_catalog (every built-in type does;
// an extension's type, such as citext, is compared by pg_catalog's equality
// of the type it converts to implicitly, text for citext: case-sensitively).
// Name Table with its schema, or it is found through the
// search_path. Users make one per fenced table whose columns differ from
// FenceUpdate's defaults.
type FenceGuard struct {
	// Table is the table, schema-qualified or not:
	// pgx.Identifier{"shard_assignment"} or
	// pgx.Identifier{"app", "shard_assignment"}.
	Table pgx.Identifier
	// IDColumn identifies a row; usually the primary key.
	IDColumn string
	// TokenColumn holds the newest token the row has accepted, a bigint.
	// Default DefaultTokenColumn (see AddFencingColumn).
	TokenColumn string
	// UpdatedAtColumn, if not empty, is set to CURRENT_TIMESTAMP by every
	// accepted update.
	UpdatedAtColumn string
}

// SplitIdentifier splits a possibly schema-qualified name at its dots:
// "app.shard_assignment" → {"app", "shard_assignment"}. For a name that
// itself contains a dot, build the pgx.Identifier directly.
func SplitIdentifier(name string) pgx.Identifier {
	return pgx.Identifier(strings.Split(name, "."))
}

// FenceUpdate runs a fenced update of the row of table (see
// SplitIdentifier) whose idColumn equals id, with the default token column
// and no updated-at column. See FenceGuard.Update.
func FenceUpdate(ctx context.Context, db Execer, table, idColumn string, id any, token uint64, set map[string]any) error {
	return FenceGuard{Table: SplitIdentifier(table), IDColumn: idColumn}.Update(ctx, db, id, token, set)
}

// Update sets the columns in set (name → value, passed as parameters) on
// the row whose IDColumn equals id, and records token, if token is at least
// the row's current token. Run it in the transaction that makes the write
// the token protects, and roll back on error.
//
// When the row's token is newer, nothing changes and the error is (wraps) a
// *fence.StaleError with Presented = token and Required = the row's token,
// matching tenure.ErrStaleToken. When there is no such row, the error wraps
// ErrRowNotFound. Token 0 is rejected with an error wrapping
// fence.ErrMissingToken.
func (f FenceGuard) Update(ctx context.Context, db Execer, id any, token uint64, set map[string]any) error {
	q, err := f.build(set)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("postgres: fenced update of %s row %s = %v", q.table, q.id, id)
	if token == 0 {
		return fmt.Errorf("%s: %w: token 0", what, fence.ErrMissingToken)
	}
	if token > math.MaxInt64 {
		return fmt.Errorf("%s: %w: token %d exceeds bigint", what, fence.ErrMalformedToken, token)
	}
	args := append([]any{id, int64(token)}, q.values...)
	tag, err := db.Exec(ctx, q.update, args...)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if tag.RowsAffected() > 0 {
		return nil
	}
	var cur int64
	err = db.QueryRow(ctx, q.current, id).Scan(&cur)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("%s: %w", what, ErrRowNotFound)
	case err != nil:
		return fmt.Errorf("%s: read its token after a refusal: %w", what, err)
	case uint64(cur) > token:
		return fmt.Errorf("%s: %w", what, &fence.StaleError{Presented: token, Required: uint64(cur)})
	default:
		// The row was not there or not visible when the UPDATE ran, and is
		// now: nothing was written.
		return fmt.Errorf("%s: the row changed during the update (its token is now %d); nothing was written, try again", what, cur)
	}
}

type fenceSQL struct {
	table, id       string
	update, current string
	values          []any
}

func (f FenceGuard) build(set map[string]any) (fenceSQL, error) {
	var errs []error
	if len(f.Table) == 0 || len(f.Table) > 3 {
		errs = append(errs, fmt.Errorf("%w: FenceGuard.Table %q: want 1 to 3 parts", ErrInvalidOption, []string(f.Table)))
	}
	for _, p := range f.Table {
		if p == "" {
			errs = append(errs, fmt.Errorf("%w: FenceGuard.Table %q has an empty part", ErrInvalidOption, []string(f.Table)))
			break
		}
	}
	if f.IDColumn == "" {
		errs = append(errs, fmt.Errorf("%w: FenceGuard.IDColumn is empty", ErrInvalidOption))
	}
	tokenCol := f.TokenColumn
	if tokenCol == "" {
		tokenCol = DefaultTokenColumn
	}
	names := make([]string, 0, len(set))
	for name := range set {
		switch name {
		case "":
			errs = append(errs, fmt.Errorf("%w: FenceGuard.Update: empty column name in set", ErrInvalidOption))
		case tokenCol, f.UpdatedAtColumn:
			errs = append(errs, fmt.Errorf("%w: FenceGuard.Update: set must not name column %q: the guard sets it", ErrInvalidOption, name))
		default:
			names = append(names, name)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fenceSQL{}, err
	}
	sort.Strings(names) // the same SQL text for the same columns: cached statements
	q := fenceSQL{table: f.Table.Sanitize(), id: pgx.Identifier{f.IDColumn}.Sanitize()}
	tok := pgx.Identifier{tokenCol}.Sanitize()
	var b strings.Builder
	fmt.Fprintf(&b, "UPDATE %s SET ", q.table)
	for i, name := range names {
		fmt.Fprintf(&b, "%s = $%d, ", pgx.Identifier{name}.Sanitize(), i+3)
		q.values = append(q.values, set[name])
	}
	fmt.Fprintf(&b, "%s = $2", tok)
	if f.UpdatedAtColumn != "" {
		fmt.Fprintf(&b, ", %s = CURRENT_TIMESTAMP", pgx.Identifier{f.UpdatedAtColumn}.Sanitize())
	}
	fmt.Fprintf(&b, " WHERE %s OPERATOR(pg_catalog.=) $1 AND %s OPERATOR(pg_catalog.<=) $2", q.id, tok)
	q.update = b.String()
	q.current = fmt.Sprintf("SELECT %s FROM %s WHERE %s OPERATOR(pg_catalog.=) $1", tok, q.table, q.id)
	return q, nil
}

// AddFencingColumn adds the column "fencing_token bigint NOT NULL DEFAULT
// 0" to table (see SplitIdentifier) unless it has one, for FenceGuard and
// FenceUpdate. Existing rows get token 0, so any real token is accepted by
// them once. If the table already has a fencing_token column of another
// type, the error wraps ErrTableShape and names the table and the column.
// Call it once per fenced table, at deployment or start-up.
func AddFencingColumn(ctx context.Context, db Execer, table string) error {
	t := SplitIdentifier(table).Sanitize()
	col := pgx.Identifier{DefaultTokenColumn}.Sanitize()
	if _, err := db.Exec(ctx, "ALTER TABLE "+t+" ADD COLUMN IF NOT EXISTS "+col+" bigint NOT NULL DEFAULT 0"); err != nil {
		return fmt.Errorf("postgres: add column %s to %s: %w", col, t, err)
	}
	_, cols, err := columns(ctx, db, t)
	if err != nil {
		return fmt.Errorf("postgres: inspect table %s: %w", t, err)
	}
	if c := cols[DefaultTokenColumn]; c.typ != "bigint" {
		return fmt.Errorf("%w: table %s: column %q is %s; want bigint", ErrTableShape, t, DefaultTokenColumn, c.typ)
	}
	return nil
}
