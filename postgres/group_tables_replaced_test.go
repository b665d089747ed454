package postgres_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/postgres"
)

// TestGroupTablesReplacedUnderACoordinator: a Coordinator acquired a key
// that can name a partition beside its own group tables; an admin then
// drops them, and a role that may create tables in public plants its own
// before any member joins again. The Coordinator's next Acquire of such a
// key must look at the tables again, not trust what it saw: refused
// (ErrTableShape), with none of the planted code run; a key without '/' is
// not hindered.
func TestGroupTablesReplacedUnderACoordinator(t *testing.T) {
	t.Parallel()
	r := newReplacement(t)
	c, ctx := r.c, ctxFor(t, 3*time.Minute)
	m, err := c.JoinGroup(ctx, "jobs", "m", time.Minute, 0) // the victim's group tables
	if err != nil {
		t.Fatal(err)
	}
	g, err := c.Acquire(ctx, "jobs/0", "a", time.Minute)
	if err != nil {
		t.Fatalf("Acquire(jobs/0) beside the victim's own group tables = %v", err)
	}
	if err := c.Release(ctx, g); err != nil {
		t.Fatal(err)
	}
	if err := c.LeaveGroup(ctx, m); err != nil {
		t.Fatal(err)
	}
	conn, spy := r.replace(t)

	for _, key := range []string{"jobs/0", "jobs/1", "other/0"} {
		g, err := c.Acquire(ctx, key, "a", time.Minute)
		if !errors.Is(err, postgres.ErrTableShape) {
			t.Errorf("Acquire(%s) beside planted group tables, by a Coordinator that saw its own there before = %v, %v; want ErrTableShape", key, g, err)
		}
	}
	if _, err := c.Acquire(ctx, "jobs", "a", time.Minute); err != nil {
		t.Errorf("Acquire(jobs) = %v", err)
	}
	if calls := spyCalls(t, conn, spy); len(calls) > 0 {
		t.Errorf("a Coordinator that saw its own group tables used the ones another role planted in their place, and ran its code %d times: %q", len(calls), calls)
	}
}

// TestGroupTablesReplacedUnderAMember: as
// TestGroupTablesReplacedUnderACoordinator, but the victim is a member that
// joined beside its own group tables. After the superuser drops them and a
// role with CREATE on public plants its own, the member's next statements
// (RenewMember, CheckPartitions, ClaimPartitions, ReleasePartitions,
// LeaveGroup) and a status read (GroupMembers, GroupPartitions, ListForeign)
// must look at whose the tables are, as JoinGroup and Acquire do: the
// member's are refused as lost (tenure.ErrLost and ErrTableShape), the
// reads with ErrTableShape (ListForeign lists nothing of them), and none of
// the planted code runs.
func TestGroupTablesReplacedUnderAMember(t *testing.T) {
	t.Parallel()
	r := newReplacement(t)
	c, ctx := r.c, ctxFor(t, 3*time.Minute)
	m, err := c.JoinGroup(ctx, "jobs", "m", time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.ClaimPartitions(ctx, m, []string{"0"})
	if err != nil || res[0].Err != nil {
		t.Fatalf("ClaimPartitions(%s, 0) = %v, %v", m, res, err)
	}
	conn, spy := r.replace(t)

	ops := []struct {
		name string
		run  func() error
		want error
	}{
		{"RenewMember", func() error { _, err := c.RenewMember(ctx, m); return err }, tenure.ErrLost},
		{"CheckPartitions", func() error { _, err := c.CheckPartitions(ctx, m, []tenure.Grant{res[0].Grant}); return err }, tenure.ErrLost},
		{"ClaimPartitions", func() error { _, err := c.ClaimPartitions(ctx, m, []string{"1"}); return err }, tenure.ErrLost},
		{"ReleasePartitions", func() error { return c.ReleasePartitions(ctx, m, []tenure.Grant{res[0].Grant}) }, tenure.ErrLost},
		{"GroupMembers", func() error { _, err := c.GroupMembers(ctx, "jobs"); return err }, postgres.ErrTableShape},
		{"GroupPartitions", func() error { _, err := c.GroupPartitions(ctx, "jobs"); return err }, postgres.ErrTableShape},
		{"ListForeign", func() error {
			rs, err := c.ListForeign(ctx, "")
			if err == nil && len(rs) > 0 {
				err = fmt.Errorf("ListForeign() = %v", rs)
			}
			return err
		}, nil},
		{"RemoveForeign", func() error {
			ok, err := c.RemoveForeign(ctx, tenure.ForeignRecord{Key: "jobs/9", Holder: "planted", Token: 1, Malformed: true})
			if err == nil && ok {
				err = errors.New("RemoveForeign() removed a row of the planted tables")
			}
			return err
		}, nil},
		{"LeaveGroup", func() error { return c.LeaveGroup(ctx, m) }, tenure.ErrLost},
	}
	seen := 0
	for _, op := range ops {
		err := op.run()
		if !errors.Is(err, op.want) || op.want == nil && err != nil {
			t.Errorf("%s on group tables another role planted after the member joined = %v; want %v", op.name, err, op.want)
		}
		if op.want == tenure.ErrLost && !errors.Is(err, postgres.ErrTableShape) {
			t.Errorf("%s = %v; want it to wrap ErrTableShape too, naming the tables", op.name, err)
		}
		calls := spyCalls(t, conn, spy)
		if len(calls) > seen {
			t.Errorf("%s (returned %v) on group tables another role planted after the member joined ran its code: %q", op.name, err, calls[seen:])
		}
		seen = len(calls)
	}
}

// replacement is a Coordinator of plantingRoles' victim.
type replacement struct {
	plantingRoles
	c *postgres.Coordinator
}

func newReplacement(t *testing.T) replacement {
	r := newPlantingRoles(t)
	return replacement{plantingRoles: r, c: open(t, r.victimDSN)}
}

// replace drops the group tables as the superuser, and makes the hostile
// role plant its own (plantGroupTables). It returns the hostile role's
// connection, closed when t ends, and its schema.
func (r replacement) replace(t *testing.T) (*pgx.Conn, string) {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	if _, err := newPool(t, r.db).Exec(ctx, `DROP TABLE public.cluster_leadership_members, public.cluster_leadership_partitions`); err != nil {
		t.Fatal(err)
	}
	conn := r.hostile(ctx, t)
	plantGroupTables(t, conn, r.spy)
	return conn, r.spy
}
