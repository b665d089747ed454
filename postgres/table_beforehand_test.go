package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tenure-dev/tenure/postgres"
)

// dialTableMadeBeforehand runs stmts on dsn, which make a leadership table
// named table before tenure's first run, and dials two Coordinators on it
// (closed when t ends). Dial may refuse such a table with ErrTableShape:
// then it logs the refusal and returns ok false, for the test to pass. Any
// other Dial error fails t.
func dialTableMadeBeforehand(ctx context.Context, t *testing.T, dsn, table string, stmts ...string) (a, b *postgres.Coordinator, ok bool) {
	t.Helper()
	pool := newPool(t, dsn)
	for _, s := range stmts {
		if _, err := pool.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	a, err := postgres.Dial(ctx, dsn, postgres.WithTable(table))
	if errors.Is(err, postgres.ErrTableShape) {
		t.Logf("Dial() = %v", err)
		return nil, nil, false
	}
	if err != nil {
		t.Fatalf("Dial() = %v; want ErrTableShape", err)
	}
	t.Cleanup(func() { a.Close() })
	return a, open(t, dsn, postgres.WithTable(table)), true
}
