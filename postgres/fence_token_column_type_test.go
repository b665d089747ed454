package postgres_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenure-dev/tenure/postgres"
)

// TestFenceTokenColumnComparedAsBigint: a fenced table made beforehand
// whose token column is not a bigint. The guard's comparison must be of
// numbers: a token column of text would compare tokens as strings, where
// "10" <= "9", and accept token 9 after 10 (etcd's tokens, revisions,
// grow by one digit at a time). Whatever the column's type, a token below
// the row's is never written; on a numeric column (numeric, double
// precision) the guard works as on a bigint.
func TestFenceTokenColumnComparedAsBigint(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	pool := newPool(t, dsn)
	ctx := ctxFor(t, time.Minute)
	for _, typ := range []string{"text", "character varying", "numeric", "double precision"} {
		t.Run(typ, func(t *testing.T) {
			table := "fenced_" + map[string]string{"text": "text", "character varying": "varchar", "numeric": "numeric", "double precision": "float"}[typ]
			for _, s := range []string{
				`CREATE TABLE ` + table + ` (id integer PRIMARY KEY, v text, fencing_token ` + typ + ` NOT NULL DEFAULT 0)`,
				`INSERT INTO ` + table + ` VALUES (1, 'none', 0)`,
			} {
				if _, err := pool.Exec(ctx, s); err != nil {
					t.Fatalf("%s: %v", s, err)
				}
			}
			write := func(token uint64, v string) error {
				return postgres.FenceGuard{Table: pgx.Identifier{"public", table}, IDColumn: "id"}.
					Update(ctx, pool, 1, token, map[string]any{"v": v})
			}
			err10 := write(10, "ten")
			err9 := write(9, "nine")
			var v string
			if err := pool.QueryRow(ctx, `SELECT v FROM `+table+` WHERE id = 1`).Scan(&v); err != nil {
				t.Fatal(err)
			}
			switch {
			case v == "nine":
				t.Errorf("token 9 was written after token 10 (Update(10) = %v, Update(9) = %v): the token went back", err10, err9)
			case (typ == "numeric" || typ == "double precision") && (err10 != nil || v != "ten"):
				t.Errorf("Update(10) on a %s token column = %v (row's v %q); want it written", typ, err10, v)
			case err9 == nil:
				t.Errorf("Update(9) after 10 = nil; want an error")
			default:
				t.Logf("Update(10) = %v; Update(9) = %v", err10, err9)
			}
		})
	}
}
