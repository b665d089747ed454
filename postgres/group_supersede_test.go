package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/pgtest"
	"github.com/tenure-dev/tenure/internal/tcpproxy"
	"github.com/tenure-dev/tenure/partition"
	"github.com/tenure-dev/tenure/postgres"

	"github.com/tenure-dev/tenure"
)

// Regression tests: a claim of a partition a member already owns grants it
// again with a new token (see partition.Coordinator), so that neither a
// restored dump of the partitions table nor a release that arrives late
// gives a token back or frees a partition its owner claimed again.

// TestRestoredPartitionsDumpGivesNoTokenBack: an operator dumps the
// partitions table while member#1 owns partition 0 with token T1; the
// member releases it and claims it again (T2 > T1); the dump is restored
// (TRUNCATE, then its rows). The member's next claim must not get a token
// below T2.
func TestRestoredPartitionsDumpGivesNoTokenBack(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	member := open(t, dsn)
	pool := newPool(t, dsn)
	m := join(ctx, t, member, "member#1")
	claim := func() tenure.Grant { return claim0(ctx, t, member, m) }
	g1 := claim()
	var dumpEpoch, dumpToken int64
	if err := pool.QueryRow(ctx, `SELECT owner_epoch, fencing_token FROM `+partitionsTable+` WHERE grp = 'jobs' AND name = '0'`).Scan(&dumpEpoch, &dumpToken); err != nil {
		t.Fatal(err)
	}
	if err := member.ReleasePartitions(ctx, m, []tenure.Grant{g1}); err != nil {
		t.Fatal(err)
	}
	g2 := claim()
	if _, err := pool.Exec(ctx, `TRUNCATE `+partitionsTable); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO `+partitionsTable+` (grp, name, owner_epoch, fencing_token) VALUES ('jobs', '0', $1, $2)`, dumpEpoch, dumpToken); err != nil {
		t.Fatal(err)
	}
	lost, err := member.CheckPartitions(ctx, m, []tenure.Grant{g2})
	g3 := claim()
	t.Logf("tokens: %d, %d, after the restore %d (CheckPartitions of the second: lost %v, %v)", g1.Token, g2.Token, g3.Token, lost, err)
	if g3.Token <= g2.Token {
		t.Errorf("claim after restoring an older dump of the partitions table: token %d; the key had token %d before (and %d was granted before that)", g3.Token, g2.Token, g1.Token)
	}
}

// TestRestoredDumpHandsNoOldTokenToAnotherMember: the partitions table
// is dumped while member#A owns partition 0 (T1); A releases it, member#B
// claims it (T2); the dump is restored. A (still live) claims partition 0.
func TestRestoredDumpHandsNoOldTokenToAnotherMember(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	c := open(t, dsn)
	pool := newPool(t, dsn)
	a, b := join(ctx, t, c, "member#A"), join(ctx, t, c, "member#B")
	g1 := claim0(ctx, t, c, a)
	var e, tok int64
	if err := pool.QueryRow(ctx, `SELECT owner_epoch, fencing_token FROM `+partitionsTable).Scan(&e, &tok); err != nil {
		t.Fatal(err)
	}
	if err := c.ReleasePartitions(ctx, a, []tenure.Grant{g1}); err != nil {
		t.Fatal(err)
	}
	g2 := claim0(ctx, t, c, b)
	if _, err := pool.Exec(ctx, `TRUNCATE `+partitionsTable); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO `+partitionsTable+` VALUES ('jobs', '0', $1, $2)`, e, tok); err != nil {
		t.Fatal(err)
	}
	res, err := c.ClaimPartitions(ctx, a, []string{"0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("A: %v; B: %v; A's claim after the restore: %+v", g1, g2, res[0])
	if res[0].Err == nil && res[0].Grant.Token <= g2.Token {
		t.Errorf("member#A granted jobs/0 with token %d (granted to it before) after member#B was granted token %d", res[0].Grant.Token, g2.Token)
	}
}

// TestLateReleaseAfterReclaim: member#1 owns partition 0 (token T1);
// its release of it takes 3s to cross the network and is abandoned after
// 1s; member#1 claims partition 0 again and is granted it; then the late
// release arrives. A second member must not be granted partition 0 while
// member#1's second grant stands.
func TestLateReleaseAfterReclaim(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	p, viaProxy := proxied(t, dsn)
	viaProxy = pgtest.WithParams(viaProxy, map[string]string{"default_query_exec_mode": "exec", "pool_max_conns": "1"})
	ctx := ctxFor(t, time.Minute)
	c := open(t, dsn)
	late := open(t, viaProxy)
	m1 := join(ctx, t, c, "member#1")
	g1 := claim0(ctx, t, c, m1)
	if _, err := late.GroupMembers(ctx, "jobs"); err != nil { // its one connection is open
		t.Fatal(err)
	}
	sent := time.Now()
	p.SetLatency(tcpproxy.Up, 3*time.Second)
	actx, cancel := context.WithTimeout(ctx, time.Second)
	relErr := late.ReleasePartitions(actx, m1, []tenure.Grant{g1})
	cancel()
	if relErr == nil {
		t.Fatal("a release through the slow link succeeded")
	}
	g1b := claim0(ctx, t, c, m1)
	time.Sleep(time.Until(sent.Add(4500 * time.Millisecond))) // the release has arrived and run
	m2 := join(ctx, t, c, "member#2")
	res2, err := c.ClaimPartitions(ctx, m2, []string{"0"})
	if err != nil {
		t.Fatal(err)
	}
	lost, cerr := c.CheckPartitions(ctx, m1, []tenure.Grant{g1b})
	t.Logf("first grant %v; abandoned release: %v; second grant %v; member#2's claim %+v; member#1's check: lost %v, %v", g1, relErr, g1b, res2[0], lost, cerr)
	if res2[0].Err == nil {
		t.Errorf("partition 0 granted to member#2 (token %d) while member#1 holds the grant it claimed again (token %d) after abandoning a release that ran late", res2[0].Grant.Token, g1b.Token)
	}
}

// join makes id a member of group "jobs" on c, with a one-minute lease.
func join(ctx context.Context, t *testing.T, c *postgres.Coordinator, id string) partition.Member {
	t.Helper()
	m, err := c.JoinGroup(ctx, "jobs", id, time.Minute, 0)
	if err != nil {
		t.Fatalf("JoinGroup(jobs, %s) error = %v", id, err)
	}
	return m
}

// claim0 claims partition 0 for m and returns its grant.
func claim0(ctx context.Context, t *testing.T, c *postgres.Coordinator, m partition.Member) tenure.Grant {
	t.Helper()
	res, err := c.ClaimPartitions(ctx, m, []string{"0"})
	if err != nil || res[0].Err != nil {
		t.Fatalf("ClaimPartitions(%s, 0) = %+v, %v; want a grant", m, res, err)
	}
	return res[0].Grant
}
