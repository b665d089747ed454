package postgres_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/postgres"
)

// TestAcquireShapeOfTablesMadeAgain: a Coordinator's Acquire reads the
// group tables' shape once per pair of tables, not in every call
// (TestAcquireStatements). Group tables that an administrator drops and
// makes again under it, of the same role but of another shape (a
// partition name of type name, which truncates), are other tables: its
// next Acquire of a key that can name a partition reads their shape and
// refuses the key (ErrTableShape naming the column). A shape changed in
// place (ALTER) is refused by the next group operation, and from then on
// by Acquire too.
func TestAcquireShapeOfTablesMadeAgain(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	pool := newPool(t, dsn)
	c := open(t, dsn)
	ctx := ctxFor(t, time.Minute)
	cycle := func() error {
		t.Helper()
		g, err := c.Acquire(ctx, "jobs/0", "a", time.Minute)
		if err != nil {
			return err
		}
		return c.Release(ctx, g)
	}
	refused := func(what, want string) {
		t.Helper()
		if err := cycle(); !errors.Is(err, postgres.ErrTableShape) || !strings.Contains(err.Error(), want) {
			t.Errorf("Acquire(jobs/0) %s = %v; want ErrTableShape naming %q", what, err, want)
		}
	}
	m, err := c.JoinGroup(ctx, "jobs", "m", time.Minute, 0) // tenure's tables
	if err != nil {
		t.Fatal(err)
	}
	if err := cycle(); err != nil {
		t.Fatalf("Acquire(jobs/0) beside tenure's group tables = %v", err)
	}
	if err := c.LeaveGroup(ctx, m); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `DROP TABLE cluster_leadership_members, cluster_leadership_partitions;
CREATE TABLE cluster_leadership_members (epoch bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, grp text NOT NULL,
	member text NOT NULL, ttl_us bigint NOT NULL, expires_at timestamptz NOT NULL, partitions integer, joined_grp text);
CREATE TABLE cluster_leadership_partitions (grp text NOT NULL, name pg_catalog.name NOT NULL, owner_epoch bigint,
	fencing_token bigint NOT NULL, PRIMARY KEY (grp, name))`); err != nil {
		t.Fatal(err)
	}
	refused("beside group tables made again with a partition name of type name", "column name of cluster_leadership_partitions is name")

	// Tenure's shape again (the control), then changed in place.
	if _, err := pool.Exec(ctx, `ALTER TABLE cluster_leadership_partitions ALTER COLUMN name TYPE text`); err != nil {
		t.Fatal(err)
	}
	if err := cycle(); err != nil {
		t.Fatalf("Acquire(jobs/0) beside group tables of tenure's shape again = %v", err)
	}
	if _, err := pool.Exec(ctx, `ALTER TABLE cluster_leadership_members ALTER COLUMN expires_at DROP NOT NULL`); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GroupMembers(ctx, "jobs"); !errors.Is(err, postgres.ErrTableShape) {
		t.Fatalf("GroupMembers(jobs) beside a members table whose expires_at may be NULL = %v; want ErrTableShape", err)
	}
	refused("after GroupMembers found a members table whose expires_at may be NULL", "column expires_at of cluster_leadership_members may be NULL")
}
