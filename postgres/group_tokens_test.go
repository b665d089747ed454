package postgres_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/postgres"
)

// The group tables of the default leadership table.
const (
	membersTable    = "public.cluster_leadership_members"
	partitionsTable = "public.cluster_leadership_partitions"
)

// claimCycle joins group "jobs" as holder, claims partition "0", releases
// it and leaves, returning the partition's token.
func claimCycle(t *testing.T, c *postgres.Coordinator, holder string) uint64 {
	t.Helper()
	ctx := ctxFor(t, 10*time.Second)
	m, err := c.JoinGroup(ctx, "jobs", holder, 5*time.Second, 0)
	if err != nil {
		t.Fatalf("JoinGroup(%q) = %v", holder, err)
	}
	res, err := c.ClaimPartitions(ctx, m, []string{"0"})
	if err != nil || res[0].Err != nil {
		t.Fatalf("ClaimPartitions(0) = %+v, %v; want a grant", res, err)
	}
	if err := c.ReleasePartitions(ctx, m, []tenure.Grant{res[0].Grant}); err != nil {
		t.Fatalf("ReleasePartitions() = %v", err)
	}
	if err := c.LeaveGroup(ctx, m); err != nil {
		t.Fatalf("LeaveGroup() = %v", err)
	}
	return res[0].Grant.Token
}

// groupDump is a data-only dump of the group tables, as pg_dump
// --data-only writes it: each table's rows (COPY) and the membership
// epoch sequence's value (setval).
type groupDump struct {
	members, partitions []byte
	epochs              int64
}

func dumpGroupTables(t *testing.T, pool *pgxpool.Pool) groupDump {
	t.Helper()
	ctx := ctxFor(t, 10*time.Second)
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	var d groupDump
	for table, out := range map[string]*[]byte{membersTable: &d.members, partitionsTable: &d.partitions} {
		var buf bytes.Buffer
		if _, err := conn.Conn().PgConn().CopyTo(ctx, &buf, `COPY `+table+` TO STDOUT`); err != nil {
			t.Fatalf("COPY %s TO STDOUT: %v", table, err)
		}
		*out = buf.Bytes()
	}
	if err := conn.QueryRow(ctx, `SELECT last_value FROM public.cluster_leadership_members_epoch_seq`).Scan(&d.epochs); err != nil {
		t.Fatal(err)
	}
	return d
}

// restore empties the group tables and loads d, as psql does with a
// pg_dump --data-only file.
func (d groupDump) restore(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `TRUNCATE `+membersTable+`, `+partitionsTable); err != nil {
		return err
	}
	for table, rows := range map[string][]byte{membersTable: d.members, partitionsTable: d.partitions} {
		if _, err := conn.Conn().PgConn().CopyFrom(ctx, bytes.NewReader(rows), `COPY `+table+` FROM STDIN`); err != nil {
			return err
		}
	}
	_, err = conn.Exec(ctx, `SELECT setval('public.cluster_leadership_members_epoch_seq', $1)`, d.epochs)
	return err
}

// TestPartitionTokensNeverRepeatWhenRowsGo: an operator deletes a
// partition's row, truncates the partition table, drops and re-creates the
// group tables, or restores an older dump of them. A partition's tokens
// must still only grow, as the leadership table's do
// (TestTokensNeverRepeatWhenRowsGo): a resource that has seen the old ones
// would otherwise reject every new owner, or accept a repeated token from
// a second one.
func TestPartitionTokensNeverRepeatWhenRowsGo(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	pool := newPool(t, dsn)
	c := open(t, dsn)
	var last uint64
	for range 2 {
		last = claimCycle(t, c, "a#1")
	}
	old := dumpGroupTables(t, pool)
	for range 3 {
		last = claimCycle(t, c, "a#1")
	}
	exec := func(sql string) func(ctx context.Context) error {
		return func(ctx context.Context) error { _, err := pool.Exec(ctx, sql); return err }
	}
	steps := []struct {
		name string
		do   func(ctx context.Context) error
	}{
		{"row deleted", exec(`DELETE FROM ` + partitionsTable + ` WHERE grp = 'jobs' AND name = '0'`)},
		{"partition table truncated", exec(`TRUNCATE ` + partitionsTable)},
		{"group tables dropped and re-created", exec(`DROP TABLE ` + partitionsTable + `, ` + membersTable)},
		{"older dump restored", func(ctx context.Context) error { return old.restore(ctx, pool) }},
	}
	for _, st := range steps {
		if err := st.do(ctxFor(t, 10*time.Second)); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		for i := range 2 { // the first claim after the step, and the next
			got := claimCycle(t, c, "b#1") // JoinGroup re-creates dropped tables
			if got <= last {
				t.Errorf("after the %s, claim %d: token %d; want greater than %d, the last one granted", st.name, i+1, got, last)
			}
			last = max(last, got)
		}
	}
}
