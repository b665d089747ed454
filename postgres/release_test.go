package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
)

// TestLateReleaseRacingReclaim: member m owns partition 0 (grant
// g1); an operator's transaction holds the partition's row while m claims
// it again and a release of g1, sent late, arrives: both wait on the row,
// in one order or the other. When the operator commits, the release must
// free the row only if it still holds g1's token: released first, the
// partition is free and the claim (refused by REPEATABLE READ, run again)
// takes it with a new token; claimed first, the release's row lock meets
// the new token and frees nothing. Either way m holds its new grant
// afterwards: its check keeps it and member o's claim is refused.
func TestLateReleaseRacingReclaim(t *testing.T) {
	t.Parallel()
	for _, releaseFirst := range []bool{false, true} {
		name := "claim queued first"
		if releaseFirst {
			name = "release queued first"
		}
		t.Run(name, func(t *testing.T) {
			dsn := newDB(t)
			ctx := ctxFor(t, time.Minute)
			c := open(t, dsn)
			pool := newPool(t, dsn)
			m, o := join(ctx, t, c, "m"), join(ctx, t, c, "o")
			g1 := claim0(ctx, t, c, m)
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			if _, err := tx.Exec(ctx, `SELECT 1 FROM `+partitionsTable+` WHERE grp = 'jobs' AND name = '0' FOR UPDATE`); err != nil {
				t.Fatal(err)
			}
			released := make(chan error, 1)
			release := func() { released <- c.ReleasePartitions(ctx, m, []tenure.Grant{g1}) }
			claimed := make(chan tenureClaim, 1)
			reclaim := func() {
				res, err := c.ClaimPartitions(ctx, m, []string{"0"})
				if err != nil {
					claimed <- tenureClaim{err: err}
					return
				}
				claimed <- tenureClaim{res[0].Grant, res[0].Err}
			}
			first, second := reclaim, release
			if releaseFirst {
				first, second = release, reclaim
			}
			go first()
			awaitLockWaiters(ctx, t, pool, 1)
			go second()
			awaitLockWaiters(ctx, t, pool, 2)
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			relErr, g2 := <-released, <-claimed
			if relErr != nil || g2.err != nil {
				t.Fatalf("release of %v: %v; m's claim again: %v", g1, relErr, g2.err)
			}
			if g2.g.Token <= g1.Token {
				t.Errorf("m's claim again: token %d, not above its first grant's %d", g2.g.Token, g1.Token)
			}
			lost, err := c.CheckPartitions(ctx, m, []tenure.Grant{g2.g})
			if err != nil || len(lost) > 0 {
				t.Errorf("m's CheckPartitions(%v) after the late release of %v = %v, %v; want it kept", g2.g, g1, lost, err)
			}
			res := claims(ctx, t, c, o, []string{"0"})
			var held *tenure.HeldError
			if !errors.As(res[0].err, &held) {
				t.Errorf("o's claim of partition 0 while m holds %v = %+v; want a HeldError", g2.g, res[0])
			}
		})
	}
}

// TestReleaseFreesOnlyWhatItNames: member m releases, in one call and
// out of order, a grant it holds (twice), a grant it superseded by
// claiming its partition again, a grant naming member o's partition with
// o's token, a grant of a partition with no row, one of another group and
// one whose token does not fit a bigint. Only the first partition may be
// freed.
func TestReleaseFreesOnlyWhatItNames(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	c := open(t, dsn)
	m, o := join(ctx, t, c, "m"), join(ctx, t, c, "o")
	mine := claims(ctx, t, c, m, []string{"a", "b", "huge"})
	again := claims(ctx, t, c, m, []string{"b"})
	theirs := claims(ctx, t, c, o, []string{"c"})
	for _, r := range append(append(mine, again...), theirs...) {
		if r.err != nil {
			t.Fatal(r.err)
		}
	}
	forged := theirs[0].g
	forged.Holder = "m"
	huge := mine[2].g
	huge.Token += 1 << 63
	gs := []tenure.Grant{mine[1].g, forged, huge, mine[0].g, {Key: "jobs/none", Holder: "m", Token: 1},
		{Key: "other/a", Holder: "m", Token: mine[0].g.Token}, mine[0].g}
	if err := c.ReleasePartitions(ctx, m, gs); err != nil {
		t.Fatal(err)
	}
	lost, err := c.CheckPartitions(ctx, m, []tenure.Grant{mine[0].g, again[0].g, mine[2].g})
	if err != nil {
		t.Fatal(err)
	}
	if len(lost) != 1 || lost[0] != mine[0].g {
		t.Errorf("after releasing %v, m's check of a, b (claimed again) and huge lost %v; want only a", gs, lost)
	}
	if lost, err := c.CheckPartitions(ctx, o, []tenure.Grant{theirs[0].g}); err != nil || len(lost) > 0 {
		t.Errorf("o's check of c after m released a grant naming it = %v, %v; want it kept", lost, err)
	}
}

// A claim that names a partition twice claims it once and answers both
// places with the same grant, as the memory coordinator does.
func TestClaimNamingAPartitionTwice(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	c := open(t, dsn)
	m := join(ctx, t, c, "m")
	rs, err := c.ClaimPartitions(ctx, m, []string{"a", "b", "a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 || rs[0].Err != nil || rs[1].Err != nil || rs[0].Grant != rs[2].Grant || rs[0].Grant.Key != "jobs/a" {
		t.Fatalf("claim of a, b, a = %+v; want a's one grant at both of its places", rs)
	}
	if lost, err := c.CheckPartitions(ctx, m, []tenure.Grant{rs[0].Grant, rs[1].Grant}); err != nil || len(lost) > 0 {
		t.Errorf("check after the claim = %v, %v; want both owned", lost, err)
	}
}
