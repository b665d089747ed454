package postgres_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/postgres"
)

// TestGroupTablesShape: group tables made beforehand that differ from
// tenure's where its statements depend on it are refused (ErrTableShape
// naming the column and what is wrong) by JoinGroup and by the reads: a
// members epoch that is not unique on its own (a second row with a live
// member's epoch frees that member's partitions), a column tenure reads
// that may be NULL (a membership with a NULL expires_at is neither live
// nor expired), of another type, or missing. Tables of tenure's shape made
// beforehand are used.
func TestGroupTablesShape(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	pool := newPool(t, dsn)
	ctx := ctxFor(t, time.Minute)
	const (
		epoch      = `epoch bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY`
		members    = `grp text NOT NULL, member text NOT NULL, ttl_us bigint NOT NULL, expires_at timestamptz NOT NULL, partitions integer, joined_grp text`
		partitions = `grp text NOT NULL, name text NOT NULL, owner_epoch bigint, fencing_token bigint NOT NULL, PRIMARY KEY (grp, name)`
	)
	for i, tc := range []struct{ name, members, partitions, want string }{
		{"tenure's shape", epoch + `, ` + members, partitions, ""},
		{"epoch not unique", `epoch bigint NOT NULL, ` + members, partitions, `column epoch of %s_members has no unique index`},
		{"epoch unique with grp", `epoch bigint NOT NULL, ` + members + `, UNIQUE (epoch, grp)`, partitions, `column epoch of %s_members has no unique index`},
		{"integer epoch", `epoch integer PRIMARY KEY, ` + members, partitions, `column epoch of %s_members is integer; want bigint`},
		{"nullable expires_at", epoch + `, ` + strings.Replace(members, "timestamptz NOT NULL", "timestamptz", 1), partitions, `column expires_at of %s_members may be NULL`},
		{"expires_at without time zone", epoch + `, ` + strings.Replace(members, "timestamptz", "timestamp", 1), partitions, `column expires_at of %s_members is timestamp without time zone; want timestamp with time zone`},
		{"nullable ttl_us", epoch + `, ` + strings.Replace(members, "ttl_us bigint NOT NULL", "ttl_us bigint", 1), partitions, `column ttl_us of %s_members may be NULL`},
		{"missing ttl_us", epoch + `, ` + strings.Replace(members, "ttl_us bigint NOT NULL, ", "", 1), partitions, `column ttl_us of %s_members is missing`},
		{"nullable partition token", epoch + `, ` + members, strings.Replace(partitions, "fencing_token bigint NOT NULL", "fencing_token bigint", 1), `column fencing_token of %s_partitions may be NULL`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table := fmt.Sprintf("shape%d", i)
			if _, err := pool.Exec(ctx, `CREATE TABLE `+table+`_members (`+tc.members+`);
CREATE TABLE `+table+`_partitions (`+tc.partitions+`)`); err != nil {
				t.Fatal(err)
			}
			c := open(t, dsn, postgres.WithTable(table))
			_, err := c.JoinGroup(ctx, "g", "a#1", 10*time.Second, 1)
			_, rerr := c.GroupMembers(ctx, "g")
			if tc.want == "" {
				if err != nil || rerr != nil {
					t.Fatalf("JoinGroup(), GroupMembers() on tables of tenure's shape = %v, %v; want a membership", err, rerr)
				}
				return
			}
			want := fmt.Sprintf(tc.want, table)
			for _, e := range []error{err, rerr} {
				if !errors.Is(e, postgres.ErrTableShape) || !strings.Contains(e.Error(), want) {
					t.Errorf("JoinGroup(), GroupMembers() = %v, %v; want ErrTableShape naming %q", err, rerr, want)
					break
				}
			}
		})
	}
}
