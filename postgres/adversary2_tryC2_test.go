package postgres_test

import (
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
)

// TestTryRestoredDumpHandsAnOldTokenToAnotherMember: the partitions table
// is dumped while member#A owns partition 0 (T1); A releases it, member#B
// claims it (T2); the dump is restored. A (still live) claims partition 0.
func TestTryRestoredDumpHandsAnOldTokenToAnotherMember(t *testing.T) {
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	c := open(t, dsn)
	pool := newPool(t, dsn)
	a, err := c.JoinGroup(ctx, "jobs", "member#A", time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.JoinGroup(ctx, "jobs", "member#B", time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.ClaimPartitions(ctx, a, []string{"0"})
	if err != nil || res[0].Err != nil {
		t.Fatal(res, err)
	}
	g1 := res[0].Grant
	var e, tok int64
	if err := pool.QueryRow(ctx, `SELECT owner_epoch, fencing_token FROM `+partitionsTable).Scan(&e, &tok); err != nil {
		t.Fatal(err)
	}
	if err := c.ReleasePartitions(ctx, a, []tenure.Grant{g1}); err != nil {
		t.Fatal(err)
	}
	res, err = c.ClaimPartitions(ctx, b, []string{"0"})
	if err != nil || res[0].Err != nil {
		t.Fatal(res, err)
	}
	g2 := res[0].Grant
	if _, err := pool.Exec(ctx, `TRUNCATE `+partitionsTable); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO `+partitionsTable+` VALUES ('jobs', '0', $1, $2)`, e, tok); err != nil {
		t.Fatal(err)
	}
	res, err = c.ClaimPartitions(ctx, a, []string{"0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("A: %v; B: %v; A's claim after the restore: %+v", g1, g2, res[0])
	if res[0].Err == nil && res[0].Grant.Token <= g2.Token {
		t.Errorf("member#A granted jobs/0 with token %d (granted to it before) after member#B was granted token %d", res[0].Grant.Token, g2.Token)
	}
}
