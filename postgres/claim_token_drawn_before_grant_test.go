//go:build openfinding

// Open finding: a claim draws its token (clock_timestamp()) in its first
// write, the partition row's INSERT ... ON CONFLICT, and can then wait on
// that row's lock. A single-key grant of the key that commits meanwhile
// (the one-statement acquisition, which never touches the partition row)
// gets a greater, clock-drawn token; if an admin then deletes the key's
// leadership row, the claim's write of that row meets no row and is not
// refused (40001), so the claim commits the token it drew before the grant:
// a later grant with a smaller token while the single-key holder still acts
// (until its next renewal). No token here is ahead of the clock, which
// docs/safety.md names as the only way a later token can be smaller.
//
// Run it with:
//
//	go test -race -count=1 -tags openfinding -run TestClaimTokenDrawnBeforeGrant ./postgres/
//
// Seen (red, deterministic): "the claim that committed after single-2's
// grant (token 1796549614607173) got token 1796549614508321 while single-2
// still holds g/0 (its leadership row deleted): want a greater token".
package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenure-dev/tenure/partition"
	"github.com/tenure-dev/tenure/postgres"
)

// TestClaimTokenDrawnBeforeGrant: an admin's transaction locks partition 0's
// row (SELECT ... FOR UPDATE) while a member's claim of it is under way; a
// new Coordinator acquires g/0 meanwhile; the admin deletes g/0's
// leadership row and commits. The claim, which commits after the grant,
// must get a greater token.
func TestClaimTokenDrawnBeforeGrant(t *testing.T) {
	dsn := newDB(t)
	c := open(t, dsn)
	ctx := ctxFor(t, time.Minute)
	m, err := c.JoinGroup(ctx, "g", "m", time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	g0, err := c.Acquire(ctx, "g/0", "single", time.Minute) // writes partition 0's row, ownerless
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Release(ctx, g0); err != nil { // the row names its holder: the one-statement path
		t.Fatal(err)
	}
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	tx, err := admin.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(ctx, `SELECT 1 FROM public.cluster_leadership_partitions WHERE grp = 'g' AND name = '0' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	type result struct {
		res []partition.ClaimResult
		err error
	}
	claimed := make(chan result, 1)
	go func() {
		res, err := c.ClaimPartitions(ctx, m, []string{"0"})
		claimed <- result{res, err}
	}()
	waitForLockWait(t, ctx, c)
	fresh, err := postgres.New(ctx, c.Pool())
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	g, err := fresh.Acquire(ctx, "g/0", "single-2", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM public.cluster_leadership WHERE resource = 'g/0'`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-claimed
	if r.err != nil || r.res[0].Err != nil {
		t.Fatalf("ClaimPartitions(m, 0) = %v, %v", r.res, r.err)
	}
	tok := r.res[0].Grant.Token
	t.Logf("single-2's grant %d; the claim after it, %d", g.Token, tok)
	if tok <= g.Token {
		t.Errorf("the claim that committed after single-2's grant (token %d) got token %d while single-2 still holds g/0 (its leadership row deleted): want a greater token", g.Token, tok)
	}
}
