package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/postgres"
)

// TestRemoveForeignWaitingOnARenewal: a grant of a day's TTL (the longest
// tenure grants) whose expires_at was pushed out to infinity by hand is
// listed as foreign; RemoveForeign of that record waits on the row's lock
// while the holder renews the grant, with a statement that started after
// RemoveForeign's, so it writes an expires_at a day after a later moment
// than RemoveForeign's start. The row is then a tenure grant as it stands
// (less than a day left), and RemoveForeign must leave it live.
func TestRemoveForeignWaitingOnARenewal(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	c, pool := open(t, dsn), newPool(t, dsn)
	ctx := ctxFor(t, time.Minute)
	g, err := c.Acquire(ctx, "p/day", "h1", 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	where := `resource = 'p/day'`
	if _, err := pool.Exec(ctx, `UPDATE `+c.Table()+` SET expires_at = 'infinity' WHERE `+where); err != nil {
		t.Fatal(err)
	}
	rs, err := c.ListForeign(ctx, "p/")
	if err != nil || len(rs) != 1 || rs[0].Token != g.Token {
		t.Fatalf("ListForeign(p/) = %+v, %v; want p/day at token %d", rs, err, g.Token)
	}
	if removed, err := removeWhileRenewed(t, c, pool, c.Table(), where, rs[0]); removed || err != nil {
		t.Errorf("RemoveForeign(%+v) waiting on its renewal = %v, %v; want false, nil: the renewed row is a live grant", rs[0], removed, err)
	}
	if l, held, err := c.Leader(ctx, "p/day"); err != nil || !held || l.Token != g.Token {
		t.Errorf("Leader(p/day) after the renewal = %v, held %v, %v; want the renewed grant %v", l, held, err, g)
	}
}

// TestRemoveForeignMembershipWaitingOnARenewal: the same for the membership
// row of a member of a day's TTL, listed as a foreign membership record
// while its expires_at was infinity: RemoveForeign that waited on the
// member's renewal leaves the renewed row, and the member stays.
func TestRemoveForeignMembershipWaitingOnARenewal(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	c, pool := open(t, dsn), newPool(t, dsn)
	ctx := ctxFor(t, time.Minute)
	m, err := c.JoinGroup(ctx, "g", "day#1", 24*time.Hour, 2)
	if err != nil {
		t.Fatal(err)
	}
	members := c.Table()[:len(c.Table())-1] + `_members"`
	where := fmt.Sprintf("epoch = %d", m.Epoch)
	if _, err := pool.Exec(ctx, `UPDATE `+members+` SET expires_at = 'infinity' WHERE `+where); err != nil {
		t.Fatal(err)
	}
	rs, err := c.ListForeign(ctx, "g")
	if err != nil || len(rs) != 1 || rs[0].Member != "day#1" {
		t.Fatalf("ListForeign(g) = %+v, %v; want day#1's membership row", rs, err)
	}
	if removed, err := removeWhileRenewed(t, c, pool, members, where, rs[0]); removed || err != nil {
		t.Errorf("RemoveForeign(%+v) waiting on its renewal = %v, %v; want false, nil: the renewed row is a member's", rs[0], removed, err)
	}
	if ms, err := c.GroupMembers(ctx, "g"); err != nil || len(ms) != 1 || ms[0].Epoch != m.Epoch {
		t.Errorf("GroupMembers(g) after the renewal = %v, %v; want day#1 still", ms, err)
	}
}

// TestRemoveForeignPartitionOwnerWaitingOnARenewal: the same for a
// partition record whose owner is that membership row (RemoveForeign of
// the partition deletes its owner's row): RemoveForeign that waited on the
// member's renewal leaves the renewed row, the member stays and still owns
// its partition.
func TestRemoveForeignPartitionOwnerWaitingOnARenewal(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	c, pool := open(t, dsn), newPool(t, dsn)
	ctx := ctxFor(t, time.Minute)
	m, err := c.JoinGroup(ctx, "g", "day#1", 24*time.Hour, 2)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.ClaimPartitions(ctx, m, []string{"0"})
	if err != nil || res[0].Err != nil {
		t.Fatalf("ClaimPartitions(0) = %+v, %v", res, err)
	}
	members := c.Table()[:len(c.Table())-1] + `_members"`
	where := fmt.Sprintf("epoch = %d", m.Epoch)
	if _, err := pool.Exec(ctx, `UPDATE `+members+` SET expires_at = 'infinity' WHERE `+where); err != nil {
		t.Fatal(err)
	}
	rs, err := c.ListForeign(ctx, "g/")
	if err != nil || len(rs) != 1 || rs[0].Key != "g/0" || rs[0].Member != "" || rs[0].Token != res[0].Grant.Token {
		t.Fatalf("ListForeign(g/) = %+v, %v; want partition g/0 at token %d", rs, err, res[0].Grant.Token)
	}
	if removed, err := removeWhileRenewed(t, c, pool, members, where, rs[0]); removed || err != nil {
		t.Errorf("RemoveForeign(%+v) waiting on its owner's renewal = %v, %v; want false, nil: the renewed row is a member's", rs[0], removed, err)
	}
	if ms, err := c.GroupMembers(ctx, "g"); err != nil || len(ms) != 1 || ms[0].Epoch != m.Epoch {
		t.Errorf("GroupMembers(g) after the renewal = %v, %v; want day#1 still", ms, err)
	}
	if lost, err := c.CheckPartitions(ctx, m, []tenure.Grant{res[0].Grant}); err != nil || len(lost) != 0 {
		t.Errorf("CheckPartitions(g/0) after the renewal = %v, %v; want it still day#1's", lost, err)
	}
}

// removeWhileRenewed runs RemoveForeign(r) while a transaction holds the
// lock of the row of table where selects, waits until RemoveForeign waits
// on it, then renews the row as a renewal of a day's TTL whose statement
// starts now writes it (expires_at a day after the statement's start; the
// holder's own renewal would queue behind RemoveForeign), commits, and
// returns what RemoveForeign returned.
func removeWhileRenewed(t *testing.T, c *postgres.Coordinator, pool *pgxpool.Pool, table, where string, r tenure.ForeignRecord) (bool, error) {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, `SELECT 1 FROM `+table+` WHERE `+where+` FOR NO KEY UPDATE`); err != nil {
		t.Fatal(err)
	}
	type result struct {
		removed bool
		err     error
	}
	done := make(chan result, 1)
	go func() {
		removed, err := c.RemoveForeign(ctx, r)
		done <- result{removed, err}
	}()
	waitUntil(t, 20*time.Second, "RemoveForeign waits on the row lock", func() bool {
		var n int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid() AND datname = current_database()`).Scan(&n)
		return err == nil && n == 1
	})
	time.Sleep(10 * time.Millisecond) // the renewal's statement starts later than RemoveForeign's
	if _, err := tx.Exec(ctx, `UPDATE `+table+` SET expires_at = statement_timestamp() + interval '24 hours' WHERE `+where); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	res := <-done
	return res.removed, res.err
}
