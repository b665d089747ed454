package postgres_test

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestJoinBesideAnEpochAtBigintMax: one row written by hand, or left by
// another program, with an epoch at bigint's maximum: a partition row of
// another group owned by epoch 2^63-1 (no membership has it: it owns
// nothing), or an expired membership row of another group with that
// epoch. A join draws its epoch above every epoch and owner_epoch of the
// tables, so it cannot draw one. Either JoinGroup of group g still
// succeeds, or the record that stops it is one ListForeign names and
// RemoveForeign frees, after which JoinGroup succeeds.
func TestJoinBesideAnEpochAtBigintMax(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, plant string }{
		{"partition row owned by no membership", `INSERT INTO %p (grp, name, owner_epoch, fencing_token) VALUES ('other', '0', $1, 1)`},
		{"expired membership row", `INSERT INTO %m (epoch, grp, member, ttl_us, expires_at, partitions, joined_grp) OVERRIDING SYSTEM VALUE
VALUES ($1, 'other', 'ghost#1', 1000000, now() - interval '1 second', 1, 'other')`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := open(t, newDB(t))
			ctx := ctxFor(t, 30*time.Second)
			if _, err := c.JoinGroup(ctx, "setup", "s#1", time.Second, 1); err != nil { // makes the group tables
				t.Fatal(err)
			}
			base := c.Table()[:len(c.Table())-1]
			sql := strings.NewReplacer("%p", base+`_partitions"`, "%m", base+`_members"`).Replace(tc.plant)
			if _, err := c.Pool().Exec(ctx, sql, int64(math.MaxInt64)); err != nil {
				t.Fatal(err)
			}
			_, err := c.JoinGroup(ctx, "g", "a#1", 10*time.Second, 1)
			if err == nil {
				return
			}
			t.Logf("JoinGroup(g) beside the row = %v", err)
			rs, lerr := c.ListForeign(ctx, "")
			t.Logf("ListForeign() = %+v, %v", rs, lerr)
			for _, r := range rs {
				ok, err := c.RemoveForeign(ctx, r)
				t.Logf("RemoveForeign(%+v) = %v, %v", r, ok, err)
			}
			if _, err := c.JoinGroup(ctx, "g", "a#1", 10*time.Second, 1); err != nil {
				t.Errorf("JoinGroup(g) after RemoveForeign of every record ListForeign names = %v; want a membership: no record status shows or release --force frees stops every join", err)
			}
		})
	}
}
