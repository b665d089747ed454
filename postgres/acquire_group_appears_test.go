package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/postgres"
)

// TestAcquireAfterGroupAppears: a Coordinator that acquired a key that can
// name a partition while no group tables existed, and so acquires it with
// one statement that reads no partition row, still never takes it from a
// member of a group made afterwards that claimed it; once the member has
// released it, the Acquire is granted with a greater token.
func TestAcquireAfterGroupAppears(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	elector, member := open(t, dsn), open(t, dsn)
	for range 2 { // the first inserts the key's row; the second is the one-statement Acquire
		g, err := elector.Acquire(ctx, "jobs/0", "elector", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := elector.Release(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	m, err := member.JoinGroup(ctx, "jobs", "member", time.Minute, 0) // makes the group tables
	if err != nil {
		t.Fatal(err)
	}
	res, err := member.ClaimPartitions(ctx, m, []string{"0"})
	if err != nil || res[0].Err != nil {
		t.Fatalf("ClaimPartitions(0) = %v, %v", res, err)
	}
	for _, c := range []*postgres.Coordinator{elector, open(t, dsn)} { // one that saw no group tables, and a new one
		g, err := c.Acquire(ctx, "jobs/0", "elector", time.Minute)
		if !errors.Is(err, tenure.ErrHeld) {
			t.Fatalf("Acquire(jobs/0) over member's live partition (token %d) = %v, %v; want held", res[0].Grant.Token, g, err)
		}
		t.Logf("Acquire(jobs/0) while the member owns partition 0: %v", err)
	}
	if err := member.ReleasePartitions(ctx, m, []tenure.Grant{res[0].Grant}); err != nil {
		t.Fatal(err)
	}
	g, err := elector.Acquire(ctx, "jobs/0", "elector", time.Minute)
	if err != nil || g.Token <= res[0].Grant.Token {
		t.Fatalf("Acquire(jobs/0) after the partition's release = %v, %v; want a token above the partition's %d", g, err, res[0].Grant.Token)
	}
}
