package postgres_test

// Regression test of an adversary's finding: at READ COMMITTED, a claim
// that waited on one row's lock took the next row from a member that had
// joined and claimed it meanwhile (the owner's membership was looked up in
// the statement's older snapshot). Fixed by the claim's REPEATABLE READ
// transaction (see claim in partitions.go).

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/partition"

	"github.com/tenure-dev/tenure"
)

// waitLockWaiters waits until n sessions of dsn's database wait on a lock.
func waitLockWaiters(t *testing.T, dsn string, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var waiting int
		queryRow(t, dsn, `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock'`, nil, &waiting)
		if waiting >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions wait on a lock after 20s; want %d", waiting, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestClaimDuringAJoinTakesNothingOwned: member n claims partitions "a" and
// "b" while another transaction holds partition "a"'s row (another
// member's claim not yet committed), so n's claim statement waits there
// with its snapshot already taken. Meanwhile member k joins and claims "b",
// free (a new row, or a row released before), and starts work on it. When
// the lock goes, n's claim reaches "b": k's membership is live, so "b" must
// be reported held by k, not granted to n as well.
func TestClaimDuringAJoinTakesNothingOwned(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		existing []string // partitions with a row, free, before the claims
	}{
		{"b is a new row", []string{"a"}},
		{"b is a released row", []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) { claimDuringAJoin(t, tc.existing) })
	}
}

func claimDuringAJoin(t *testing.T, existing []string) {
	dsn := newDB(t)
	pool := newPool(t, dsn)
	c := open(t, dsn)
	ctx := ctxFor(t, 60*time.Second)
	const ttl = 30 * time.Second

	// The existing partitions have rows, free.
	l, err := c.JoinGroup(ctx, "g", "l#1", ttl, 0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.ClaimPartitions(ctx, l, existing)
	if err != nil {
		t.Fatalf("l claims %v: %v", existing, err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("l claims %v: %+v", existing, res)
		}
		if err := c.ReleasePartitions(ctx, l, []tenure.Grant{r.Grant}); err != nil {
			t.Fatal(err)
		}
	}
	n, err := c.JoinGroup(ctx, "g", "n#1", ttl, 0)
	if err != nil {
		t.Fatal(err)
	}

	// Another transaction holds partition a's row.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, `SELECT 1 FROM `+partitionsTable+` WHERE grp = 'g' AND name = 'a' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}

	type claim struct {
		res []partition.ClaimResult
		err error
	}
	nDone := make(chan claim, 1)
	go func() {
		r, err := c.ClaimPartitions(ctx, n, []string{"a", "b"})
		nDone <- claim{r, err}
	}()
	waitLockWaiters(t, dsn, 1) // n's claim waits on a, its snapshot taken

	k, err := c.JoinGroup(ctx, "g", "k#1", ttl, 0)
	if err != nil {
		t.Fatal(err)
	}
	kres, err := c.ClaimPartitions(ctx, k, []string{"b"})
	if err != nil || kres[0].Err != nil {
		t.Fatalf("k claims b: %+v, %v; want a grant (b is free)", kres, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	got := <-nDone
	var held *tenure.HeldError
	switch {
	case got.err != nil:
		t.Errorf("n's claim: %v; want it run again with a new snapshot, and a result for each partition", got.err)
	case got.res[1].Err == nil:
		t.Errorf("partition b granted to both k (token %d) and n (token %d), k's membership live: two owners",
			kres[0].Grant.Token, got.res[1].Grant.Token)
	case !errors.As(got.res[1].Err, &held) || held.Holder != k.ID:
		t.Errorf("n's claim of b: %v; want a *tenure.HeldError naming k", got.res[1].Err)
	case got.res[0].Err != nil:
		t.Errorf("n's claim of a: %v; want a grant (a is free once the lock goes)", got.res[0].Err)
	}
	if _, err := c.RenewMember(ctx, k); err != nil {
		t.Errorf("k's RenewMember() = %v; want k still a member", err)
	}
	gs, err := c.GroupPartitions(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gs {
		if g.Key == "g/b" && g.Holder != k.ID {
			t.Errorf("GroupPartitions: g/b held by %q (token %d); want k, which claimed it first and still works on it", g.Holder, g.Token)
		}
	}
}
