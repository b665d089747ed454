//go:build openfinding

// Open finding (issue 34 item 3, on PostgreSQL). The group tables are
// used as they stand when they exist: nothing checks their shape. Group
// tables made beforehand by the coordinator's own role (an administrator
// who creates tenure's tables ahead, as for the leadership table) whose
// grp column compares under a nondeterministic collation (ICU,
// case-insensitive) make groups that differ in case one group: group
// "G"'s GroupMembers lists the members of group "g" too, and a member of
// "G" is refused its partition "0" because "g"'s member owns it. Run:
//
//	PATH=/usr/lib/postgresql/15/bin:$PATH go test -tags openfinding -race -count=1 -run TestGroupTablesNondeterministicCollation ./postgres/
//
// Seen: ClaimPartitions("G", 0) = … tenure: key "G/0" held by "g-member";
// GroupMembers("G") = ["G-member" in "G" … "g-member" in "G" …]; want
// [G-member] (and the same for "g"). A fix: check the group tables' shape
// as the leadership table's is (checkLeadershipShape), refusing a
// nondeterministic collation on grp, name or member.

package postgres_test

import (
	"testing"
	"time"

	"github.com/tenure-dev/tenure/postgres"
)

// TestGroupTablesNondeterministicCollation: group tables made beforehand
// with a case-insensitive grp column are refused, or groups "G" and "g"
// stay apart: each lists only its own member and claims its own
// partition "0".
func TestGroupTablesNondeterministicCollation(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	pool := newPool(t, dsn)
	for _, q := range []string{
		`CREATE COLLATION case_insensitive (provider = icu, locale = 'und-u-ks-level2', deterministic = false)`,
		`CREATE TABLE ci_members (
	epoch      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	grp        text COLLATE case_insensitive NOT NULL,
	member     text NOT NULL,
	ttl_us     bigint NOT NULL,
	expires_at timestamptz NOT NULL,
	partitions integer)`,
		`CREATE TABLE ci_partitions (
	grp           text COLLATE case_insensitive NOT NULL,
	name          text NOT NULL,
	owner_epoch   bigint,
	fencing_token bigint NOT NULL,
	PRIMARY KEY (grp, name))`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	c, err := postgres.Dial(ctx, dsn, postgres.WithTable("ci"))
	if err != nil {
		t.Fatalf("Dial() error = %v", err)
	}
	defer c.Close()
	for _, g := range []string{"g", "G"} {
		m, err := c.JoinGroup(ctx, g, g+"-member", time.Minute, 1)
		if err != nil {
			t.Logf("JoinGroup(%q) refused: %v", g, err)
			return
		}
		res, err := c.ClaimPartitions(ctx, m, []string{"0"})
		if err != nil || res[0].Err != nil {
			t.Errorf("ClaimPartitions(%q, 0) = %+v, %v; want a grant: partition 0 of another group", g, res, err)
		}
	}
	for _, g := range []string{"g", "G"} {
		ms, err := c.GroupMembers(ctx, g)
		if err != nil || len(ms) != 1 || ms[0].ID != g+"-member" {
			t.Errorf("GroupMembers(%q) = %v, %v; want [%s-member]", g, ms, err, g)
		}
	}
}
