package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
)

// TestTryAcquireBeforeGroupTablesExist: an Elector's Acquire of "jobs/0"
// finds no group tables, then its UPDATE waits on the key's row lock (an
// operator's open transaction); a member joins (creating the tables) and
// claims partition 0; the operator's transaction ends; the Acquire goes on.
func TestTryAcquireBeforeGroupTablesExist(t *testing.T) {
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	elector, member := open(t, dsn), open(t, dsn)
	pool := newPool(t, dsn)
	g0, err := elector.Acquire(ctx, "jobs/0", "elector#0", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := elector.Release(ctx, g0); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, `SELECT 1 FROM `+elector.Table()+` WHERE resource = 'jobs/0' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	type result struct {
		g   tenure.Grant
		err error
	}
	done := make(chan result, 1)
	go func() {
		g, err := elector.Acquire(ctx, "jobs/0", "elector#1", time.Minute)
		done <- result{g, err}
	}()
	waitUntil(t, 20*time.Second, "the Acquire waits on the row lock", func() bool {
		var n int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'WITH g AS%'`).Scan(&n)
		return err == nil && n == 1
	})
	m, err := member.JoinGroup(ctx, "jobs", "member#1", time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := member.ClaimPartitions(ctx, m, []string{"0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	t.Logf("claim: %+v; Acquire: %+v, %v", res[0], r.g, r.err)
	if res[0].Err == nil && r.err == nil {
		lost, err := member.CheckPartitions(ctx, m, []tenure.Grant{res[0].Grant})
		l, ok, lerr := elector.Leader(ctx, "jobs/0")
		t.Errorf("jobs/0 held by member#1 (token %d; CheckPartitions lost %v, %v) and by elector#1 (token %d; Leader %+v %v %v) at once",
			res[0].Grant.Token, lost, err, r.g.Token, l, ok, lerr)
	}
}

// TestTryRenewMemberWaitsPastExpiry: a member's renewal starts before its
// lease ends, then waits on its row's lock (an operator's FOR SHARE read)
// past the end; meanwhile an Elector acquires the key of the member's
// partition. The renewal must not revive the lease.
func TestTryRenewMemberWaitsPastExpiry(t *testing.T) {
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	elector, member := open(t, dsn), open(t, dsn)
	pool := newPool(t, dsn)
	const ttl = 2 * time.Second
	m, err := member.JoinGroup(ctx, "jobs", "member#1", ttl, 0)
	if err != nil {
		t.Fatal(err)
	}
	joined := time.Now()
	res, err := member.ClaimPartitions(ctx, m, []string{"0"})
	if err != nil || res[0].Err != nil {
		t.Fatalf("claim = %+v, %v", res, err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, `SELECT 1 FROM `+membersTable+` WHERE epoch = $1 FOR SHARE`, int64(m.Epoch)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	time.Sleep(time.Until(joined.Add(ttl * 3 / 5))) // the renewal starts late in the lease
	go func() {
		m2, err := member.RenewMember(ctx, m)
		if err == nil {
			m = m2
		}
		done <- err
	}()
	waitUntil(t, 20*time.Second, "the renewal waits on the row lock", func() bool {
		var n int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'UPDATE%members%'`).Scan(&n)
		return err == nil && n == 1
	})
	if time.Since(joined) > ttl*4/5 {
		t.Skip("too slow to start the renewal well before the lease ends")
	}
	time.Sleep(time.Until(joined.Add(ttl + 300*time.Millisecond)))
	g, aerr := elector.Acquire(ctx, "jobs/0", "elector#1", time.Minute)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	rerr := <-done
	t.Logf("Acquire after the lease ended: %+v, %v; the renewal that waited: %v", g, aerr, rerr)
	if aerr == nil && rerr == nil {
		lost, cerr := member.CheckPartitions(ctx, m, []tenure.Grant{res[0].Grant})
		_, rerr2 := member.RenewMember(ctx, m)
		t.Errorf("jobs/0 held by elector#1 (token %d) and, after its renewal revived the lease, by member#1 (token %d; CheckPartitions lost %v, %v; next renewal %v)",
			g.Token, res[0].Grant.Token, lost, cerr, rerr2)
	}
}

// TestTryRestoredPartitionsDumpGivesTokenBack: an operator dumps the
// partitions table while member#1 owns partition 0 with token T1; the
// member releases it and claims it again (T2 > T1); the dump is restored
// (TRUNCATE, then its rows). The member's next claim must not get a token
// below T2.
func TestTryRestoredPartitionsDumpGivesTokenBack(t *testing.T) {
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	member := open(t, dsn)
	pool := newPool(t, dsn)
	m, err := member.JoinGroup(ctx, "jobs", "member#1", time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	claim := func() tenure.Grant {
		t.Helper()
		res, err := member.ClaimPartitions(ctx, m, []string{"0"})
		if err != nil || res[0].Err != nil {
			t.Fatalf("claim = %+v, %v", res, err)
		}
		return res[0].Grant
	}
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
