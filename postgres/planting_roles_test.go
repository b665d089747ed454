package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// plantingRoles is a database of its own with two login roles on it: a
// victim, which may create tables in public (every role's right on
// PostgreSQL 13 and 14) as an application's role would, and a hostile
// role, which may too and owns a schema (spy) where the objects it plants
// record who ran them.
type plantingRoles struct {
	db, victimDSN, hostileDSN, spy string
}

func newPlantingRoles(t *testing.T) plantingRoles {
	t.Helper()
	srv := server(t)
	db := srv.NewDatabase(t)
	victimDSN, _ := srv.NewRole(t, db, `GRANT CREATE ON SCHEMA public TO %s`)
	hostileDSN, hostile := srv.NewRole(t, db, `GRANT CREATE ON SCHEMA public TO %s`, `CREATE SCHEMA %s AUTHORIZATION %s`)
	return plantingRoles{db: db, victimDSN: victimDSN, hostileDSN: hostileDSN, spy: pgx.Identifier{hostile}.Sanitize()}
}

// hostile returns a connection as the hostile role, closed when t ends.
func (r plantingRoles) hostile(ctx context.Context, t *testing.T) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx, r.hostileDSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}
