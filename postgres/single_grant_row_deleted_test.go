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
// have a greater token: the single-key grant wrote its token into the
// partition's row too. The partition was never claimed, or claimed by a
// member that left, or by one whose membership expired (its row still
// there).
func TestSingleGrantTokenAfterLeadershipRowDeleted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		ahead  string // the row written by hand, ahead of the clock
		claim  bool   // whether a claim of g/0 precedes the single-key grant
		second string // "partition" or "single"
		expire bool   // the claimer's membership expires rather than leaves
	}{
		{"leadership row ahead, then a claim", `INSERT INTO public.cluster_leadership (resource, fencing_token) VALUES ('g/0', ` + aheadOfClock + `)`, false, "partition", false},
		{"leadership row ahead, then a single key", `INSERT INTO public.cluster_leadership (resource, fencing_token) VALUES ('g/0', ` + aheadOfClock + `)`, false, "single", false},
		{"partition row ahead, then a claim", `INSERT INTO public.cluster_leadership_partitions (grp, name, fencing_token) VALUES ('g', '0', ` + aheadOfClock + `)`, true, "partition", false},
		{"partition row ahead, then a single key", `INSERT INTO public.cluster_leadership_partitions (grp, name, fencing_token) VALUES ('g', '0', ` + aheadOfClock + `)`, true, "single", false},
		{"partition row ahead, owner expired, then a claim", `INSERT INTO public.cluster_leadership_partitions (grp, name, fencing_token) VALUES ('g', '0', ` + aheadOfClock + `)`, true, "partition", true},
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
			if tc.expire {
				exec(`UPDATE public.cluster_leadership_members SET expires_at = now() - interval '1 second'`)
			} else if err := c.LeaveGroup(ctx, m); err != nil {
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
