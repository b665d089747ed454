package postgres_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/postgres"
)

// TestGroupTablesNondeterministicCollation: group tables made beforehand
// by the coordinator's own role, whose columns naming a group, a member or
// a partition could make two names one (a case-insensitive collation on
// the column or on the partitions' primary key, citext, or name, which
// truncates), are refused with ErrTableShape naming the column, by
// JoinGroup, GroupMembers and Acquire of a key that can name a partition:
// groups "G" and "g" never share members or partitions. The same tables
// with text columns are used (the control).
func TestGroupTablesNondeterministicCollation(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	pool := newPool(t, dsn)
	for _, q := range []string{
		`CREATE COLLATION case_insensitive (provider = icu, locale = 'und-u-ks-level2', deterministic = false)`,
		`CREATE EXTENSION citext`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	const ci = "pg_catalog.text COLLATE case_insensitive"
	for _, tc := range []struct {
		name, grp, member, pname, pkey string
		bad                            string // in the error; "" for the control
	}{
		{name: "text", bad: ""},
		{name: "members_grp", grp: ci, bad: `column grp of t_members_grp_members is under a nondeterministic collation`},
		{name: "member", member: ci, bad: `column member of t_member_members is under a nondeterministic collation`},
		{name: "partitions_name", pname: ci, bad: `column name of t_partitions_name_partitions is under a nondeterministic collation`},
		{name: "primary_key", pkey: "grp COLLATE case_insensitive, name", bad: `unique index t_primary_key_partitions_grp_name_idx is under a nondeterministic collation`},
		{name: "citext", grp: "citext", bad: `column grp of t_citext_members is citext`},
		{name: "name_type", pname: "pg_catalog.name", bad: `column name of t_name_type_partitions is name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			or := func(s, def string) string {
				if s == "" {
					return def
				}
				return s
			}
			table := "t_" + tc.name
			ddl := fmt.Sprintf(`CREATE TABLE %[1]s_members (
	epoch      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	grp        %[2]s NOT NULL,
	member     %[3]s NOT NULL,
	ttl_us     bigint NOT NULL,
	expires_at timestamptz NOT NULL,
	partitions integer);
CREATE TABLE %[1]s_partitions (
	grp           %[4]s NOT NULL,
	name          %[5]s NOT NULL,
	owner_epoch   bigint,
	fencing_token bigint NOT NULL);
CREATE UNIQUE INDEX ON %[1]s_partitions (%[6]s)`, table, or(tc.grp, "text"), or(tc.member, "text"), or(tc.grp, "text"), or(tc.pname, "text"), or(tc.pkey, "grp, name"))
			if _, err := pool.Exec(ctx, ddl); err != nil {
				t.Fatalf("%s: %v", ddl, err)
			}
			c, err := postgres.Dial(ctx, dsn, postgres.WithTable(table))
			if err != nil {
				t.Fatalf("Dial() error = %v", err)
			}
			defer c.Close()
			refused := func(what string, err error) {
				t.Helper()
				switch {
				case tc.bad == "" && err != nil:
					t.Errorf("%s error = %v; want nil (tables of text columns)", what, err)
				case tc.bad != "" && (!errors.Is(err, postgres.ErrTableShape) || !strings.Contains(err.Error(), tc.bad)):
					t.Errorf("%s error = %v; want ErrTableShape naming %q", what, err, tc.bad)
				}
			}
			_, err = c.GroupMembers(ctx, "G")
			refused(`GroupMembers("G")`, err)
			_, err = c.Acquire(ctx, "G/1", "single#1", time.Minute)
			refused(`Acquire("G/1")`, err)
			for _, g := range []string{"g", "G"} {
				m, err := c.JoinGroup(ctx, g, g+"-member", time.Minute, 1)
				refused(fmt.Sprintf("JoinGroup(%q)", g), err)
				if err != nil {
					continue
				}
				res, err := c.ClaimPartitions(ctx, m, []string{"0"})
				if err != nil || res[0].Err != nil {
					t.Errorf("ClaimPartitions(%q, 0) = %+v, %v; want a grant: partition 0 of another group", g, res, err)
				}
			}
			if tc.bad != "" {
				return
			}
			for _, g := range []string{"g", "G"} {
				ms, err := c.GroupMembers(ctx, g)
				if err != nil || len(ms) != 1 || ms[0].ID != g+"-member" {
					t.Errorf("GroupMembers(%q) = %v, %v; want [%s-member]", g, ms, err, g)
				}
			}
		})
	}
}
