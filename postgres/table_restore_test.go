package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
)

// TestLeadershipTableResetUnderALivePartition: an operator truncates, then
// drops, the leadership table while member#1 owns partition 0 of "jobs".
// An Elector's Acquire of "jobs/0" (re-creating the table) is still
// refused, naming the member; once the member leaves, the Elector gets
// the key with a token above the partition's.
func TestLeadershipTableResetUnderALivePartition(t *testing.T) {
	t.Parallel()
	for _, reset := range []string{"TRUNCATE", "DROP TABLE"} {
		t.Run(reset, func(t *testing.T) {
			dsn := newDB(t)
			ctx := ctxFor(t, time.Minute)
			member := open(t, dsn)
			pool := newPool(t, dsn)
			m, err := member.JoinGroup(ctx, "jobs", "member#1", time.Minute, 0)
			if err != nil {
				t.Fatal(err)
			}
			res, err := member.ClaimPartitions(ctx, m, []string{"0"})
			if err != nil || res[0].Err != nil {
				t.Fatalf("ClaimPartitions(0) = %+v, %v; want a grant", res, err)
			}
			if _, err := pool.Exec(ctx, reset+` `+member.Table()); err != nil {
				t.Fatal(err)
			}
			elector := open(t, dsn) // re-creates a dropped table
			_, err = elector.Acquire(ctx, "jobs/0", "elector#1", time.Minute)
			var held *tenure.HeldError
			if !errors.As(err, &held) || held.Holder != "member#1" {
				t.Fatalf("Acquire(jobs/0) after %s of the leadership table = %v; want a *tenure.HeldError naming member#1", reset, err)
			}
			if err := member.LeaveGroup(ctx, m); err != nil {
				t.Fatal(err)
			}
			g, err := elector.Acquire(ctx, "jobs/0", "elector#1", time.Minute)
			if err != nil {
				t.Fatalf("Acquire(jobs/0) after the member left = %v; want a grant", err)
			}
			if g.Token <= res[0].Grant.Token {
				t.Errorf("Acquire token %d after partition token %d; want greater", g.Token, res[0].Grant.Token)
			}
		})
	}
}

// TestGroupTablesResetUnderALiveElector: an Elector holds "jobs/0"; an
// operator drops, or truncates, the group tables; a member joins
// (re-creating them) and claims partition 0: the claim is refused, naming
// the Elector, and its other partition is granted.
func TestGroupTablesResetUnderALiveElector(t *testing.T) {
	t.Parallel()
	for name, reset := range map[string]string{
		"truncate": "TRUNCATE " + membersTable + ", " + partitionsTable,
		"drop":     "DROP TABLE " + membersTable + ", " + partitionsTable,
	} {
		t.Run(name, func(t *testing.T) {
			dsn := newDB(t)
			ctx := ctxFor(t, time.Minute)
			elector, member := open(t, dsn), open(t, dsn)
			pool := newPool(t, dsn)
			m0, err := member.JoinGroup(ctx, "jobs", "member#0", time.Minute, 0) // the tables exist
			if err != nil {
				t.Fatal(err)
			}
			if err := member.LeaveGroup(ctx, m0); err != nil {
				t.Fatal(err)
			}
			g, err := elector.Acquire(ctx, "jobs/0", "elector#1", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := pool.Exec(ctx, reset); err != nil {
				t.Fatal(err)
			}
			m, err := member.JoinGroup(ctx, "jobs", "member#1", time.Minute, 0)
			if err != nil {
				t.Fatal(err)
			}
			res, err := member.ClaimPartitions(ctx, m, []string{"0", "1"})
			if err != nil {
				t.Fatal(err)
			}
			var held *tenure.HeldError
			if !errors.As(res[0].Err, &held) || held.Holder != "elector#1" || held.Token != g.Token {
				t.Errorf("claim of jobs/0 held by an Elector after %s = %+v; want a *tenure.HeldError naming elector#1, token %d", reset, res[0], g.Token)
			}
			if res[1].Err != nil {
				t.Errorf("claim of free partition 1 = %v; want a grant", res[1].Err)
			}
		})
	}
}

// TestRestoredMembersDumpDoesNotReuseEpochs: an operator dumps the members
// table, then member#2 joins and claims partition 0, and the dump is
// restored (TRUNCATE, then its rows): member#2's row is gone, its
// partition row still names its epoch. member#2 finds its membership
// lost; a member that joins afterwards gets an epoch above member#2's
// and partition 0 with a greater token.
func TestRestoredMembersDumpDoesNotReuseEpochs(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	c := open(t, dsn)
	pool := newPool(t, dsn)
	m1, err := c.JoinGroup(ctx, "jobs", "member#1", time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		epoch       int64
		grp, member string
		ttlUS       int64
		expiresAt   time.Time
	}
	var dump row
	if err := pool.QueryRow(ctx, `SELECT epoch, grp, member, ttl_us, expires_at FROM `+membersTable).Scan(&dump.epoch, &dump.grp, &dump.member, &dump.ttlUS, &dump.expiresAt); err != nil {
		t.Fatal(err)
	}
	m2, err := c.JoinGroup(ctx, "jobs", "member#2", time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.ClaimPartitions(ctx, m2, []string{"0"})
	if err != nil || res[0].Err != nil {
		t.Fatalf("claim = %+v, %v", res, err)
	}
	if _, err := pool.Exec(ctx, `TRUNCATE `+membersTable); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO `+membersTable+` (epoch, grp, member, ttl_us, expires_at) OVERRIDING SYSTEM VALUE VALUES ($1, $2, $3, $4, $5)`,
		dump.epoch, dump.grp, dump.member, dump.ttlUS, dump.expiresAt); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CheckPartitions(ctx, m2, []tenure.Grant{res[0].Grant}); !errors.Is(err, tenure.ErrLost) {
		t.Errorf("CheckPartitions of member#2 after the restore = %v; want tenure.ErrLost", err)
	}
	if _, err := c.RenewMember(ctx, m2); !errors.Is(err, tenure.ErrLost) {
		t.Errorf("RenewMember(member#2) after the restore = %v; want tenure.ErrLost", err)
	}
	m3, err := c.JoinGroup(ctx, "jobs", "member#3", time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	if m3.Epoch <= m2.Epoch || m3.Epoch <= m1.Epoch {
		t.Errorf("epoch of member#3 = %d after epochs %d and %d; want greater", m3.Epoch, m1.Epoch, m2.Epoch)
	}
	res3, err := c.ClaimPartitions(ctx, m3, []string{"0"})
	if err != nil || res3[0].Err != nil {
		t.Fatalf("claim by member#3 = %+v, %v; want a grant (its owner's row is gone)", res3, err)
	}
	if res3[0].Grant.Token <= res[0].Grant.Token {
		t.Errorf("token of jobs/0 for member#3 = %d after %d; want greater", res3[0].Grant.Token, res[0].Grant.Token)
	}
}

// TestRestoredLeadershipDumpUnderALivePartition: an operator dumps the
// leadership table while elector#1 holds "jobs/0"; the Elector releases
// it, member#1 claims partition 0, and the dump is restored (TRUNCATE,
// then its rows): the table says elector#1 holds the key again. The
// Elector's old grant is not renewed, its new Acquire is refused (the
// member owns the partition), and once the member leaves and the restored
// lease has lapsed or is released, the key's next token is above every
// token granted before.
func TestRestoredLeadershipDumpUnderALivePartition(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	elector, member := open(t, dsn), open(t, dsn)
	pool := newPool(t, dsn)
	m0, err := member.JoinGroup(ctx, "jobs", "member#0", time.Minute, 0) // the group tables exist
	if err != nil {
		t.Fatal(err)
	}
	if err := member.LeaveGroup(ctx, m0); err != nil {
		t.Fatal(err)
	}
	g1, err := elector.Acquire(ctx, "jobs/0", "elector#1", 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var holder string
	var token int64
	var acquired, expires time.Time
	if err := pool.QueryRow(ctx, `SELECT holder_id, fencing_token, acquired_at, expires_at FROM `+elector.Table()+` WHERE resource = 'jobs/0'`).Scan(&holder, &token, &acquired, &expires); err != nil {
		t.Fatal(err)
	}
	if err := elector.Release(ctx, g1); err != nil {
		t.Fatal(err)
	}
	m, err := member.JoinGroup(ctx, "jobs", "member#1", time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := member.ClaimPartitions(ctx, m, []string{"0"})
	if err != nil || res[0].Err != nil {
		t.Fatalf("claim = %+v, %v", res, err)
	}
	if _, err := pool.Exec(ctx, `TRUNCATE `+elector.Table()); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO `+elector.Table()+` (resource, holder_id, fencing_token, acquired_at, expires_at) VALUES ('jobs/0', $1, $2, $3, $4)`, holder, token, acquired, expires); err != nil {
		t.Fatal(err)
	}
	if lost, err := member.CheckPartitions(ctx, m, []tenure.Grant{res[0].Grant}); err != nil || len(lost) != 0 {
		t.Errorf("CheckPartitions of member#1 after the restore = %v, %v; want none lost (its rows are untouched)", lost, err)
	}
	var held *tenure.HeldError
	if _, err := elector.Acquire(ctx, "jobs/0", "elector#1", 3*time.Second); !errors.As(err, &held) || held.Holder != "member#1" {
		t.Errorf("Acquire(jobs/0) by the restored holder = %v; want a *tenure.HeldError naming member#1", err)
	}
	if err := member.LeaveGroup(ctx, m); err != nil {
		t.Fatal(err)
	}
	var g tenure.Grant
	waitUntil(t, 10*time.Second, "elector#2 acquires jobs/0", func() bool {
		g, err = elector.Acquire(ctx, "jobs/0", "elector#2", time.Minute)
		return err == nil
	})
	for _, before := range []uint64{g1.Token, res[0].Grant.Token} {
		if g.Token <= before {
			t.Errorf("token of jobs/0 after the restore = %d; want above %d, granted before", g.Token, before)
		}
	}
}
