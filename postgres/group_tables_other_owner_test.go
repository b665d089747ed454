package postgres_test

import (
	"github.com/tenure-dev/tenure"

	"testing"
	"time"
)

// TestAcquireBesideGroupTablesOfAnotherRole: the leadership table is the
// superuser's; role alice, which may create tables in the schema and
// write the leadership table, joins group g (making the group tables, so
// alice owns them) and claims partition 0. For a Coordinator connected as
// the superuser, alice's tables are another role's (foreignGroupTablesSQL),
// whose members may own any partition: its Acquire of g/0 must not be
// granted (it was, while CheckPartitions confirmed alice's member both
// just before and just after: two holders of one key at once).
func TestAcquireBesideGroupTablesOfAnotherRole(t *testing.T) {
	t.Parallel()
	srv := server(t)
	db := newDB(t)
	admin := open(t, db) // makes the leadership table, the superuser's
	aliceDSN, _ := srv.NewRole(t, db, `GRANT CREATE ON SCHEMA public TO %s`,
		`GRANT SELECT, INSERT, UPDATE ON public.cluster_leadership TO %s`)
	alice := open(t, aliceDSN)
	ctx := ctxFor(t, time.Minute)
	m, err := alice.JoinGroup(ctx, "g", "alice-member", time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := alice.ClaimPartitions(ctx, m, []string{"0"})
	if err != nil || res[0].Err != nil {
		t.Fatalf("ClaimPartitions(%s, 0) = %v, %v", m, res, err)
	}
	owned := res[0].Grant
	if lost, err := alice.CheckPartitions(ctx, m, []tenure.Grant{owned}); err != nil || len(lost) != 0 {
		t.Fatalf("CheckPartitions(%s, %v) = %v, %v; want nothing lost", m, owned, lost, err)
	}
	// The member acts on partition 0 until its next check, up to its deadline.
	g, err := admin.Acquire(ctx, "g/0", "single", time.Minute)
	if err == nil {
		lost, cerr := alice.CheckPartitions(ctx, m, []tenure.Grant{owned})
		leader, ok, lerr := admin.Leader(ctx, "g/0")
		t.Errorf("Acquire(g/0) as the superuser, after CheckPartitions confirmed %v for %s in alice's group tables = %v, nil; want a *tenure.HeldError (after it, the member's CheckPartitions: lost %v, %v; Leader(g/0) = %v, %v, %v)", owned, m, g, lost, cerr, leader, ok, lerr)
	} else {
		t.Logf("Acquire(g/0) as the superuser: %v", err)
	}
}
