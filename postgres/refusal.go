package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-dev/tenure"
)

// refusal returns err, wrapped with tenure.ErrRefused when PostgreSQL
// refused it for good: a privilege the role lacks (SQLSTATE 42501), a
// login refused (class 28: no such role, a wrong password, no pg_hba.conf
// entry), or, when connecting, a connection parameter it does not know
// (42704) or whose value it refuses (22023). Timeouts, a server shutting
// down or not yet up, serialization failures and deadlocks are not
// refusals.
func refusal(err error) error {
	var pgErr *pgconn.PgError
	if err == nil || errors.Is(err, tenure.ErrRefused) || !errors.As(err, &pgErr) {
		return err
	}
	var connErr *pgconn.ConnectError
	refused := pgErr.Code == "42501" || strings.HasPrefix(pgErr.Code, "28") ||
		errors.As(err, &connErr) && (pgErr.Code == "42704" || pgErr.Code == "22023")
	if !refused {
		return err
	}
	return fmt.Errorf("%w: %w", tenure.ErrRefused, err)
}

// markedPool is the Coordinator's pool: every statement's error that PostgreSQL
// refused for good, in a transaction or not, also wraps tenure.ErrRefused
// (see refusal), so that an Elector or a partition group stops instead of
// retrying it. Its guarded statements run as guard says.
type markedPool struct {
	*pgxpool.Pool
	guard *guard
}

func (p markedPool) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if p.guard != nil && p.guard.stmts[sql] {
		var tag pgconn.CommandTag
		err := p.guard.run(ctx, p.Pool, sql, func(conn *pgx.Conn) (err error) {
			tag, err = conn.Exec(ctx, sql, args...)
			return err
		})
		return tag, refusal(err)
	}
	tag, err := p.Pool.Exec(ctx, sql, args...)
	return tag, refusal(err)
}

func (p markedPool) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	rs, err := p.Pool.Query(ctx, sql, args...)
	return markedRows{rs}, refusal(err)
}

func (p markedPool) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if p.guard != nil && p.guard.stmts[sql] {
		return guardedRow{ctx: ctx, p: p, sql: sql, args: args}
	}
	return markedRow{p.Pool.QueryRow(ctx, sql, args...)}
}

func (p markedPool) Begin(ctx context.Context) (pgx.Tx, error) {
	t, err := p.Pool.Begin(ctx)
	return markedTx{t}, refusal(err)
}

func (p markedPool) BeginTx(ctx context.Context, o pgx.TxOptions) (pgx.Tx, error) {
	t, err := p.Pool.BeginTx(ctx, o)
	return markedTx{t}, refusal(err)
}

// markedTx is a pool's transaction, its errors marked as the pool's are.
type markedTx struct{ pgx.Tx }

func (t markedTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	tag, err := t.Tx.Exec(ctx, sql, args...)
	return tag, refusal(err)
}

func (t markedTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	rs, err := t.Tx.Query(ctx, sql, args...)
	return markedRows{rs}, refusal(err)
}

func (t markedTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return markedRow{t.Tx.QueryRow(ctx, sql, args...)}
}

func (t markedTx) Begin(ctx context.Context) (pgx.Tx, error) {
	sp, err := t.Tx.Begin(ctx)
	return markedTx{sp}, refusal(err)
}

func (t markedTx) Commit(ctx context.Context) error { return refusal(t.Tx.Commit(ctx)) }

// markedRow is a statement's row, its error marked as the pool's are.
type markedRow struct{ pgx.Row }

func (r markedRow) Scan(dest ...any) error { return refusal(r.Row.Scan(dest...)) }

// markedRows are a statement's rows, their error marked as the pool's are.
type markedRows struct{ pgx.Rows }

func (r markedRows) Err() error { return refusal(r.Rows.Err()) }
