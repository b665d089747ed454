package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/partition"
	"github.com/tenure-dev/tenure/postgres"

	"github.com/tenure-dev/tenure"
)

// TestPartitionRowWrittenByHand writes partition g/0's row by hand with an
// owner_epoch and a token, and checks bob's claim of it and ListForeign:
// an owner that never existed, that left or whose membership expired owns
// nothing, and bob takes the partition at once with a token above the
// row's; a token above every token the clock would give (no owner, or
// alice's) is exceeded by the next grant, alice's own claim where alice, a
// live member, owns the row (bob is refused naming her, and ListForeign
// lists nothing: see TestForeignPartitionOfLiveMember). A row naming a member of
// another group is TestPartitionOwnedByAnotherGroupsMember's.
func TestPartitionRowWrittenByHand(t *testing.T) {
	t.Parallel()
	const high = int64(1) << 62 // above the clock in µs (2^62 µs is 146,000 years)
	for _, tc := range []struct {
		name  string
		owner func(t *testing.T, ctx context.Context, c *postgres.Coordinator, alice partition.Member) any // the owner_epoch written
		token int64
		live  bool // alice owns it: bob is refused, alice claims it
	}{
		{"epoch that never existed", func(*testing.T, context.Context, *postgres.Coordinator, partition.Member) any { return int64(1) }, 7, false},
		{"member that left", func(t *testing.T, ctx context.Context, c *postgres.Coordinator, _ partition.Member) any {
			carol, err := c.JoinGroup(ctx, "g", "carol#00000003", 10*time.Second, 2)
			if err == nil {
				err = c.LeaveGroup(ctx, carol)
			}
			if err != nil {
				t.Fatal(err)
			}
			return int64(carol.Epoch)
		}, 7, false},
		{"member whose membership expired", func(t *testing.T, ctx context.Context, c *postgres.Coordinator, _ partition.Member) any {
			carol, err := c.JoinGroup(ctx, "g", "carol#00000003", 10*time.Second, 2)
			if err == nil {
				_, err = c.Pool().Exec(ctx, `UPDATE `+groupTable(c, "members")+` SET expires_at = now() - interval '1 second' WHERE epoch = $1`, int64(carol.Epoch))
			}
			if err != nil {
				t.Fatal(err)
			}
			return int64(carol.Epoch)
		}, 7, false},
		{"no owner, token above the clock", func(*testing.T, context.Context, *postgres.Coordinator, partition.Member) any { return nil }, high, false},
		{"live member, token above the clock", func(_ *testing.T, _ context.Context, _ *postgres.Coordinator, alice partition.Member) any {
			return int64(alice.Epoch)
		}, high, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, ctx, alice, bob := aliceAndBob(t)
			if _, err := c.Pool().Exec(ctx, `INSERT INTO `+groupTable(c, "partitions")+` (grp, name, owner_epoch, fencing_token) VALUES ('g', '0', $1, $2)`, tc.owner(t, ctx, c, alice), tc.token); err != nil {
				t.Fatal(err)
			}
			res, err := c.ClaimPartitions(ctx, bob, []string{"0"})
			if err != nil {
				t.Fatalf("ClaimPartitions(bob, g/0) error = %v", err)
			}
			var held *tenure.HeldError
			switch {
			case tc.live && (!errors.As(res[0].Err, &held) || held.Holder != alice.ID || held.Token != uint64(tc.token)):
				t.Errorf("ClaimPartitions(bob, g/0) = %+v; want a *HeldError naming %s at token %d", res[0], alice.ID, tc.token)
			case !tc.live && (res[0].Err != nil || res[0].Grant.Token <= uint64(tc.token)):
				t.Errorf("ClaimPartitions(bob, g/0) = %+v; want a grant with a token above %d", res[0], tc.token)
			}
			if rs, err := c.ListForeign(ctx, ""); err != nil || len(rs) != 0 {
				t.Errorf("ListForeign(\"\") = %+v, %v; want none", rs, err)
			}
			if !tc.live {
				return
			}
			res, err = c.ClaimPartitions(ctx, alice, []string{"0"})
			if err != nil || res[0].Err != nil || res[0].Grant.Token <= uint64(tc.token) {
				t.Errorf("ClaimPartitions(alice, g/0) = %+v, %v; want a grant with a token above %d", res, err, tc.token)
			}
		})
	}
}

// groupTable is the quoted name of c's group table "members" or
// "partitions".
func groupTable(c *postgres.Coordinator, which string) string {
	return c.Table()[:len(c.Table())-1] + "_" + which + `"`
}

// aliceAndBob opens a coordinator on a new database, and joins alice and
// bob to its group "g" with 10s leases; the context bounds a test's calls.
func aliceAndBob(t *testing.T) (*postgres.Coordinator, context.Context, partition.Member, partition.Member) {
	t.Helper()
	c := open(t, newDB(t))
	ctx := ctxFor(t, 30*time.Second)
	alice, err := c.JoinGroup(ctx, "g", "alice#00000001", 10*time.Second, 2)
	if err != nil {
		t.Fatal(err)
	}
	bob, err := c.JoinGroup(ctx, "g", "bob#00000002", 10*time.Second, 2)
	if err != nil {
		t.Fatal(err)
	}
	return c, ctx, alice, bob
}
