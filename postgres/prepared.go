package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A table altered in place while coordinators run (ALTER TABLE … ALTER
// COLUMN expires_at TYPE timestamp, say, whose conversion in a session west
// of the server stores every lease's end hours early) would be trusted by
// statements that checked nothing since they connected. So the
// statements that grant, renew, release and read single keys are guarded:
//
//   - Each ends its result with shapeColumns, the columns whose type,
//     type modifier or collation decides who holds a key.
//   - A connection prepares each such statement (a named prepared
//     statement) the first time the coordinator runs it there, and then
//     checks the table (checkTable) before running it. A table altered
//     before the check fails it with ErrTableShape.
//   - PostgreSQL plans a prepared statement again when its table is
//     altered, and refuses to run one whose result columns changed type,
//     type modifier or collation (SQLSTATE 0A000, "cached plan must not
//     change result type"). So a table altered after the check fails the
//     next guarded statement on every connection that prepared it before.
//     The coordinator closes that connection and runs the statement once
//     more, on a connection that prepares it and checks the table first:
//     a table altered to a shape tenure refuses fails with ErrTableShape,
//     one altered to a shape it accepts (varchar to text, say) serves on.
//
// Only connections in pgx's default mode, which prepares statements
// (QueryExecModeCacheStatement), are guarded: other modes are chosen for
// poolers that keep no prepared statement between transactions
// (PgBouncer's transaction pooling), and there a table altered in place is
// checked when a coordinator is made (New). The group operations check the
// leadership table with the group tables (groupTablesShapeSQL).
//
// What a connection's CustomData records is each coordinator's own: a
// coordinator checks the table before its first statement on each
// connection, whatever another coordinator of the pool checked there
// before (a change that leaves every column as it was, made since that
// check, would otherwise go unseen by a coordinator made after it).
type guard struct {
	key   string          // in each connection's CustomData: the statements prepared there, and checked after
	stmts map[string]bool // the guarded statements
	check func(ctx context.Context, db Execer) error
}

// shapeColumns is what every guarded statement's result ends with: the
// columns of the leadership table row l (an alias and a dot, or empty)
// whose shape decides who holds a key. Callers scan one destination fewer
// per column; the guard adds them.
func shapeColumns(l string) string {
	return l + `expires_at, ` + l + `holder_id`
}

// shapeColumnCount is the number of columns shapeColumns returns.
const shapeColumnCount = 2

// newGuard guards stmts, run on table, with check.
func newGuard(table string, check func(context.Context, Execer) error, stmts ...string) *guard {
	g := &guard{stmts: map[string]bool{}, check: check}
	g.key = fmt.Sprintf("tenure/postgres guard %p: table %s", g, table)
	for _, s := range stmts {
		if s != "" {
			g.stmts[s] = true
		}
	}
	return g
}

// run runs fn on a connection of pool where sql, a guarded statement, is
// prepared and the table was checked after. When PostgreSQL refuses the
// statement as prepared before the table was altered, it closes that
// connection and runs fn again: at most every connection of the pool
// prepared it before.
func (g *guard) run(ctx context.Context, pool *pgxpool.Pool, sql string, fn func(*pgx.Conn) error) error {
	for stale := 0; ; stale++ {
		err := g.runOnce(ctx, pool, sql, fn)
		if !resultChanged(err) {
			return err
		}
		if stale >= int(pool.Config().MaxConns) {
			return fmt.Errorf("%w: the table was altered while this coordinator ran, and its statement is still refused after %d connections were closed: %w", ErrTableShape, stale+1, err)
		}
	}
}

// runOnce is one try of run.
func (g *guard) runOnce(ctx context.Context, pool *pgxpool.Pool, sql string, fn func(*pgx.Conn) error) error {
	pc, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer pc.Release()
	conn := pc.Conn()
	err = g.prepare(ctx, conn, sql)
	if err == nil {
		err = fn(conn)
	}
	if resultChanged(err) {
		_ = conn.Close(ctx) // the pool drops it
	}
	return err
}

// connState is what a guard keeps in a connection's CustomData.
type connState struct {
	prepares bool // the connection is in pgx's default mode, which prepares statements
	// done holds the statements prepared there, the table checked after:
	// each as pgx described it when it was prepared.
	done map[string]*pgconn.StatementDescription
}

// prepare prepares sql on conn the first time it is run there, and checks
// the table after; on a connection that prepares nothing, it does nothing.
// pgx's Prepare answers from its own map, with no statement sent, while
// the connection keeps the statement; a statement deallocated since (pgx's
// DeallocateAll or Deallocate, by another user of the pool) is prepared
// again, a new description, after which the table is checked again: run
// as it was, pgx would prepare it again itself, unchecked.
func (g *guard) prepare(ctx context.Context, conn *pgx.Conn, sql string) error {
	data := conn.PgConn().CustomData()
	st, _ := data[g.key].(*connState)
	if st == nil {
		st = &connState{prepares: conn.Config().DefaultQueryExecMode == pgx.QueryExecModeCacheStatement, done: map[string]*pgconn.StatementDescription{}}
		data[g.key] = st
	}
	if !st.prepares {
		return nil
	}
	sd, err := conn.Prepare(ctx, sql, sql)
	if err != nil {
		return err
	}
	if st.done[sql] == sd {
		return nil
	}
	if err := g.check(ctx, conn); err != nil {
		return err
	}
	st.done[sql] = sd
	return nil
}

// resultChanged reports whether PostgreSQL refused a prepared statement
// whose result columns changed since it was prepared.
func resultChanged(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "0A000" && pgErr.Message == "cached plan must not change result type"
}

// guardedRow is the row of a guarded statement: the statement runs when
// the row is scanned.
type guardedRow struct {
	ctx  context.Context
	p    markedPool
	sql  string
	args []any
}

func (r guardedRow) Scan(dest ...any) error {
	dest = append(dest, make([]any, shapeColumnCount)...)
	return refusal(r.p.guard.run(r.ctx, r.p.Pool, r.sql, func(conn *pgx.Conn) error {
		return conn.QueryRow(r.ctx, r.sql, r.args...).Scan(dest...)
	}))
}

// shapeOf is shapeColumns of the row that the common table expression
// cte returned (NULLs when it returned none).
func shapeOf(cte string) string {
	return `(SELECT expires_at FROM ` + cte + `), (SELECT holder_id FROM ` + cte + `)`
}
