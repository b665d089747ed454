package postgres_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/postgres"
)

// TestSingleGrantTokenWithMembersTableDropped: a partition's key's token
// is ahead of the database clock (as in
// TestSingleGrantTokenAfterLeadershipRowDeleted); its partition was claimed
// and left. An admin drops the members table only: the partitions table,
// with the partition's row, stays. A single-key grant of g/0 now could
// write its token only into the key's leadership row (the partition's row
// is written by a statement that reads the members table); once an admin
// deleted that row too, the next grant of the key, a claim or a single-key
// Acquire, would repeat that token or go below it. So the Acquire is
// refused (ErrTableShape naming both tables), whether its Coordinator saw
// the group tables before or not. Once a member joins (which makes the
// members table again), the key is granted with its token in both rows,
// and after the leadership row is deleted the next grant's token is
// greater.
//
// Red before the refusal: the first Acquire was granted token T (ahead of
// the clock), and after the row's deletion a claim got T again and a
// single-key Acquire a token from the clock, a day below T.
func TestSingleGrantTokenWithMembersTableDropped(t *testing.T) {
	t.Parallel()
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
			first := claim(t, c, m)
			if err := c.LeaveGroup(ctx, m); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Acquire(ctx, "g/1", "warm", time.Minute); err != nil { // c has seen the group tables
				t.Fatal(err)
			}
			exec(`DROP TABLE public.cluster_leadership_members`)
			for _, ac := range []struct {
				name string
				c    *postgres.Coordinator
			}{{"a fresh Coordinator", open(t, dsn)}, {"one that saw the group tables", c}} {
				name := ac.name
				g, err := ac.c.Acquire(ctx, "g/0", "single", time.Minute)
				if !errors.Is(err, postgres.ErrTableShape) || !strings.Contains(err.Error(), "cluster_leadership_members") || !strings.Contains(err.Error(), "cluster_leadership_partitions") {
					t.Fatalf("members table dropped, partitions table kept: Acquire(g/0) by %s = %+v, %v; want ErrTableShape naming both group tables", name, g, err)
				}
				t.Logf("Acquire(g/0) by %s: %v", name, err)
			}
			m, err = c.JoinGroup(ctx, "g", "rejoin", time.Minute, 0) // makes the members table again
			if err != nil {
				t.Fatal(err)
			}
			if err := c.LeaveGroup(ctx, m); err != nil {
				t.Fatal(err)
			}
			g, err := open(t, dsn).Acquire(ctx, "g/0", "single", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if g.Token <= first {
				t.Fatalf("Acquire(g/0) token = %d; want > %d, the claim's", g.Token, first)
			}
			const deletion = `DELETE FROM public.cluster_leadership WHERE resource = 'g/0'`
			exec(deletion) // single still acts until its next renewal
			next := nextGrant(t, dsn, second)
			t.Logf("single holds g/0 with %d; after %s, the %s grant's token is %d", g.Token, deletion, second, next)
			if next <= g.Token {
				t.Errorf("after %s: a %s grant got token %d while single still holds g/0 with %d: want a greater token", deletion, second, next, g.Token)
			}
		})
	}
}

// nextGrant grants g/0 from a fresh Coordinator, as a single key or as a
// partition claimed by a member that joins ("single" or "partition"), and
// returns its token.
func nextGrant(t *testing.T, dsn, how string) uint64 {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	c := open(t, dsn)
	if how == "single" {
		g, err := c.Acquire(ctx, "g/0", "single-2", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return g.Token
	}
	m, err := c.JoinGroup(ctx, "g", "second", time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	return claim(t, c, m)
}

// TestPartitionKeyRefusedWithPartitionsTableDropped: the other half. An
// admin drops the partitions table only; a key that can name a partition
// is refused (ErrTableShape naming both tables) until the table is made
// again, and a key without '/' is not hindered.
func TestPartitionKeyRefusedWithPartitionsTableDropped(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	c := open(t, dsn)
	ctx := ctxFor(t, time.Minute)
	if _, err := c.JoinGroup(ctx, "g", "first", time.Minute, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Acquire(ctx, "g/1", "warm", time.Minute); err != nil { // c has seen the group tables
		t.Fatal(err)
	}
	if _, err := c.Pool().Exec(ctx, `DROP TABLE public.cluster_leadership_partitions`); err != nil {
		t.Fatal(err)
	}
	for _, ac := range []struct {
		name string
		c    *postgres.Coordinator
	}{{"fresh", open(t, dsn)}, {"warm", c}} {
		name := ac.name
		g, err := ac.c.Acquire(ctx, "g/0", "single", time.Minute)
		if !errors.Is(err, postgres.ErrTableShape) || !strings.Contains(err.Error(), "cluster_leadership_members\" exists without") {
			t.Fatalf("partitions table dropped, members table kept: Acquire(g/0) by the %s Coordinator = %+v, %v; want ErrTableShape naming both group tables", name, g, err)
		}
		if _, err := ac.c.Acquire(ctx, "plain-"+name, "single", time.Minute); err != nil {
			t.Fatalf("Acquire of a key without '/' by the %s Coordinator: %v", name, err)
		}
	}
	if _, err := c.JoinGroup(ctx, "g", "second", time.Minute, 0); err != nil { // makes the partitions table again
		t.Fatal(err)
	}
	if _, err := c.Acquire(ctx, "g/9", "single", time.Minute); err != nil {
		t.Fatalf("Acquire(g/9) with both group tables again: %v", err)
	}
}
