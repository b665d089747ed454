package postgres_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/partition"
	"github.com/tenure-dev/tenure/postgres"
)

// TestAcquirePartitionRaceRowDeleted is TestAcquirePartitionRace with an
// admin that also deletes the group's partition rows by hand (every third
// deletion; the rest are membership rows): a claim on a partition row that
// was deleted still meets a single-key grant of the partition's key (on the
// key's leadership row), so no two holders overlap and tokens increase.
func TestAcquirePartitionRaceRowDeleted(t *testing.T) {
	t.Parallel()
	raceAcquirePartition(t, false, `DELETE FROM public.cluster_leadership_members WHERE grp = 'g'`,
		`DELETE FROM public.cluster_leadership_members WHERE grp = 'g'`,
		`DELETE FROM public.cluster_leadership_partitions WHERE grp = 'g'`)
}

// aheadOfClock is a token a day ahead of the database clock in µs: what a
// row written by hand, or restored from a host whose clock ran ahead,
// carries. A token drawn from the clock alone is below it, so a grant
// that lost track of such a token shows.
const aheadOfClock = `(extract(epoch FROM clock_timestamp()) * 1000000)::bigint + 86400000000`

// TestTokensAboveDeletedRows: a partition's key has two rows that carry its
// tokens, the partition's row and the key's leadership row. Whichever one
// an admin deletes (or its table: truncated, dropped), or the group's
// membership rows, the next grant of the key, single-key or partition, has
// a token above the last one granted, even when that token is ahead of the
// database clock.
func TestTokensAboveDeletedRows(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		first, second string // "single" or "partition"
		deletion      string
	}{
		{"partition rows, then a claim", "single", "partition", `DELETE FROM public.cluster_leadership_partitions WHERE grp = 'g'`},
		{"partitions table, then a claim", "single", "partition", `TRUNCATE public.cluster_leadership_partitions`},
		{"group tables, then a claim", "single", "partition", `DROP TABLE public.cluster_leadership_members, public.cluster_leadership_partitions`},
		{"partition rows, then a single key", "partition", "single", `DELETE FROM public.cluster_leadership_partitions WHERE grp = 'g'`},
		{"partition rows, then another claim", "partition", "partition", `DELETE FROM public.cluster_leadership_partitions WHERE grp = 'g'`},
		{"leadership row, then a single key", "partition", "single", `DELETE FROM public.cluster_leadership WHERE resource = 'g/0'`},
		{"leadership table, then a single key", "partition", "single", `TRUNCATE public.cluster_leadership`},
		{"leadership row, then another claim", "partition", "partition", `DELETE FROM public.cluster_leadership WHERE resource = 'g/0'`},
		{"membership rows, then another claim", "partition", "partition", `DELETE FROM public.cluster_leadership_members WHERE grp = 'g'`},
		{"members table, then a single key", "partition", "single", `TRUNCATE public.cluster_leadership_members`},
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
			var first uint64
			if tc.first == "single" {
				exec(`INSERT INTO public.cluster_leadership (resource, fencing_token) VALUES ('g/0', ` + aheadOfClock + `)`)
				g, err := c.Acquire(ctx, "g/0", "single", time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				first = g.Token
				if err := c.Release(ctx, g); err != nil {
					t.Fatal(err)
				}
			} else {
				exec(`INSERT INTO public.cluster_leadership_partitions (grp, name, fencing_token) VALUES ('g', '0', ` + aheadOfClock + `)`)
				first = claim(t, c, m)
			}
			if err := c.LeaveGroup(ctx, m); err != nil {
				t.Fatal(err)
			}
			exec(tc.deletion)
			var second uint64
			if tc.second == "single" {
				g, err := c.Acquire(ctx, "g/0", "single-2", time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				second = g.Token
			} else {
				m2, err := c.JoinGroup(ctx, "g", "second", time.Minute, 0)
				if err != nil {
					t.Fatal(err)
				}
				second = claim(t, c, m2)
			}
			t.Logf("%s grant %d; after deleting (%s), %s grant %d", tc.first, first, tc.deletion, tc.second, second)
			if second <= first {
				t.Errorf("after %s: the %s grant's token %d is not above the %s grant's %d before it", tc.deletion, tc.second, second, tc.first, first)
			}
		})
	}
}

// claim claims partition "0" of m's group for m and returns its token.
func claim(t *testing.T, c *postgres.Coordinator, m partition.Member) uint64 {
	t.Helper()
	res, err := c.ClaimPartitions(ctxFor(t, 30*time.Second), m, []string{"0"})
	if err != nil || res[0].Err != nil {
		t.Fatalf("ClaimPartitions(%s, 0) = %v, %v", m, res, err)
	}
	return res[0].Grant.Token
}

// TestPartitionTokenAtMax: a partition whose row, or whose key's leadership
// row, holds bigint's maximum token has no greater token to give: a claim
// of it and a single-key Acquire of its key are refused (tenure.ErrRefused)
// with an error naming the key, and the other partitions are still claimed.
func TestPartitionTokenAtMax(t *testing.T) {
	t.Parallel()
	for name, row := range map[string]string{
		"partition row":  `INSERT INTO public.cluster_leadership_partitions (grp, name, fencing_token) VALUES ('g', '0', $1)`,
		"leadership row": `INSERT INTO public.cluster_leadership (resource, fencing_token) VALUES ('g/0', $1)`,
	} {
		t.Run(name, func(t *testing.T) {
			c := open(t, newDB(t))
			ctx := ctxFor(t, time.Minute)
			m, err := c.JoinGroup(ctx, "g", "m", time.Minute, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Pool().Exec(ctx, row, int64(math.MaxInt64)); err != nil {
				t.Fatal(err)
			}
			res, err := c.ClaimPartitions(ctx, m, []string{"0", "1"})
			if err != nil {
				t.Fatalf("ClaimPartitions() = %v", err)
			}
			t.Logf("claim of g/0: %v", res[0].Err)
			if !errors.Is(res[0].Err, tenure.ErrRefused) || !strings.Contains(res[0].Err.Error(), `"g/0"`) {
				t.Errorf("claim of g/0 = %+v, %v; want an error matching tenure.ErrRefused naming \"g/0\"", res[0].Grant, res[0].Err)
			}
			if res[1].Err != nil {
				t.Errorf("claim of g/1 = %v; want it claimed", res[1].Err)
			}
			if err := c.LeaveGroup(ctx, m); err != nil {
				t.Fatal(err)
			}
			g, err := c.Acquire(ctx, "g/0", "single", time.Minute)
			t.Logf("Acquire(g/0): %v", err)
			if !errors.Is(err, tenure.ErrRefused) || !strings.Contains(err.Error(), `"g/0"`) {
				t.Errorf("Acquire(g/0) = %v, %v; want an error matching tenure.ErrRefused naming \"g/0\"", g, err)
			}
		})
	}
}
