//go:build openfinding

// Open finding: a single-key grant of a partition's key writes its token
// into the key's leadership row only, never into the partition's row
// (acquirePartitionSQL leaves the partition row's token as it is). So
// deleting that one leadership row while the single-key holder still holds
// the key loses the holder's token: the next grant of the key, a claim or
// another single-key grant, draws from the partition row and the clock, and
// its token is not above the live holder's when that token was ahead of the
// clock. docs/safety.md says otherwise ("a leadership row deleted ... for a
// partition's key, its partition row still carries the key's last token";
// a later token is smaller only when "a partition's key's leadership row and
// partition row both" are gone). In the two "partition row ahead" cases the
// only row written by hand is the partition row, which is never deleted.
//
// Run it with:
//
//	go test -race -count=1 -tags openfinding -run TestSingleGrantTokenAfterLeadershipRowDeleted ./postgres/
//
// Seen (all four red, deterministic): "after DELETE FROM
// public.cluster_leadership WHERE resource = 'g/0', a partition grant got
// token 1796635789310134 while single still holds g/0 with
// 1796635789310135: want a greater token" (partition row ahead, then a
// claim); with the leadership row ahead, the next token is the clock's, a
// day below the live holder's.
package postgres_test

import (
	"testing"
	"time"
)

// TestSingleGrantTokenAfterLeadershipRowDeleted: a single-key holder holds a
// partition's key, whose token is ahead of the database clock (a row
// written by hand, or restored from a host whose clock ran ahead); an admin
// deletes the key's leadership row; until its next renewal the holder still
// acts, so the next grant of the key, a claim or a single-key Acquire, must
// have a greater token.
func TestSingleGrantTokenAfterLeadershipRowDeleted(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ahead  string // the row written by hand, ahead of the clock
		claim  bool   // whether a claim of g/0 precedes the single-key grant
		second string // "partition" or "single"
	}{
		{"leadership row ahead, then a claim", `INSERT INTO public.cluster_leadership (resource, fencing_token) VALUES ('g/0', ` + aheadOfClock + `)`, false, "partition"},
		{"leadership row ahead, then a single key", `INSERT INTO public.cluster_leadership (resource, fencing_token) VALUES ('g/0', ` + aheadOfClock + `)`, false, "single"},
		{"partition row ahead, then a claim", `INSERT INTO public.cluster_leadership_partitions (grp, name, fencing_token) VALUES ('g', '0', ` + aheadOfClock + `)`, true, "partition"},
		{"partition row ahead, then a single key", `INSERT INTO public.cluster_leadership_partitions (grp, name, fencing_token) VALUES ('g', '0', ` + aheadOfClock + `)`, true, "single"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := open(t, newDB(t))
			ctx := ctxFor(t, time.Minute)
			exec := func(sql string) {
				t.Helper()
				if _, err := c.Pool().Exec(ctx, sql); err != nil {
					t.Fatalf("%s: %v", sql, err)
				}
			}
			m, err := c.JoinGroup(ctx, "g", "first", time.Minute, 0) // the group tables exist
			if err != nil {
				t.Fatal(err)
			}
			exec(tc.ahead)
			if tc.claim {
				t.Logf("first claim of g/0: token %d", claim(t, c, m))
			}
			if err := c.LeaveGroup(ctx, m); err != nil {
				t.Fatal(err)
			}
			g, err := c.Acquire(ctx, "g/0", "single", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			const deletion = `DELETE FROM public.cluster_leadership WHERE resource = 'g/0'`
			exec(deletion) // single still acts until its next renewal
			var second uint64
			if tc.second == "single" {
				g2, err := c.Acquire(ctx, "g/0", "single-2", time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				second = g2.Token
			} else {
				m2, err := c.JoinGroup(ctx, "g", "second", time.Minute, 0)
				if err != nil {
					t.Fatal(err)
				}
				second = claim(t, c, m2)
			}
			t.Logf("single holds g/0 with %d; after %s, the %s grant's token is %d", g.Token, deletion, tc.second, second)
			if second <= g.Token {
				t.Errorf("after %s, a %s grant got token %d while single still holds g/0 with %d: want a greater token", deletion, tc.second, second, g.Token)
			}
			if _, err := c.Renew(ctx, g); err == nil {
				t.Errorf("Renew(%v) after its row was deleted: nil error, want it lost", g)
			}
		})
	}
}
