//go:build openfinding

package postgres_test

import (
	"testing"
	"time"
)

// Open finding (run: go test -tags openfinding -race -count=1 -run
// TestSingleGrantTokenWithMembersTableDropped ./postgres/).
//
// TestSingleGrantTokenWithMembersTableDropped: a partition's key's token
// is ahead of the database clock (as in
// TestSingleGrantTokenAfterLeadershipRowDeleted); its partition was claimed
// and left. An admin drops the members table only: the partitions table,
// with the partition's row, stays. A single-key Acquire of g/0 from a fresh
// Coordinator then takes the path for a database without group tables
// (acquireUnlessGroupsSQL wants both tables), and writes its token into the
// key's leadership row only. An admin deletes that row; until its next
// renewal the holder still acts, so the next grant of the key, a claim (the
// members table made again by a join) or a single-key Acquire, must have a
// greater token, which the partition's row alone does not carry.
//
// Red on f08cce4, and on e0075d7^ before the one-statement acquisition: the
// next grant repeats the single-key holder's token, or goes below the
// partition row's.
func TestSingleGrantTokenWithMembersTableDropped(t *testing.T) {
	for _, second := range []string{"partition", "single"} {
		t.Run(second, func(t *testing.T) {
			dsn := newDB(t)
			c := open(t, dsn)
			ctx := ctxFor(t, time.Minute)
			exec := func(sql string) {
				t.Helper()
				if _, err := c.Pool().Exec(ctx, sql); err != nil {
					t.Fatalf("%s: %v", sql, err)
				}
			}
			m, err := c.JoinGroup(ctx, "g", "first", time.Minute, 0)
			if err != nil {
				t.Fatal(err)
			}
			exec(`INSERT INTO public.cluster_leadership_partitions (grp, name, fencing_token) VALUES ('g', '0', ` + aheadOfClock + `)`)
			t.Logf("first claim of g/0: token %d", claim(t, c, m))
			if err := c.LeaveGroup(ctx, m); err != nil {
				t.Fatal(err)
			}
			exec(`DROP TABLE public.cluster_leadership_members`)
			g, err := open(t, dsn).Acquire(ctx, "g/0", "single", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			const deletion = `DELETE FROM public.cluster_leadership WHERE resource = 'g/0'`
			exec(deletion) // single still acts until its next renewal
			var next uint64
			if second == "single" {
				g2, err := open(t, dsn).Acquire(ctx, "g/0", "single-2", time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				next = g2.Token
			} else {
				c2 := open(t, dsn)
				m2, err := c2.JoinGroup(ctx, "g", "second", time.Minute, 0)
				if err != nil {
					t.Fatal(err)
				}
				next = claim(t, c2, m2)
			}
			t.Logf("single holds g/0 with %d; after %s, the %s grant's token is %d", g.Token, deletion, second, next)
			if next <= g.Token {
				t.Errorf("members table dropped, then %s: a %s grant got token %d while single still holds g/0 with %d: want a greater token", deletion, second, next, g.Token)
			}
		})
	}
}
