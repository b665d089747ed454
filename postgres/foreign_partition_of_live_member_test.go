//go:build openfinding

package postgres_test

import (
	"testing"
	"time"
)

// TestForeignPartitionOfLiveMember: a partition row written by hand (or
// left behind by a release that never reached the database) whose
// owner_epoch names a live member of its own group that never claimed it
// blocks every other member's claim for as long as that member renews,
// while ListForeign does not list it, so that RemoveForeign cannot free it.
func TestForeignPartitionOfLiveMember(t *testing.T) {
	t.Parallel()
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
	parts := c.Table()[:len(c.Table())-1] + `_partitions"`
	if _, err := c.Pool().Exec(ctx, `INSERT INTO `+parts+` (grp, name, owner_epoch, fencing_token) VALUES ('g', '0', $1, 7)`, int64(alice.Epoch)); err != nil {
		t.Fatal(err)
	}
	res, err := c.ClaimPartitions(ctx, bob, []string{"0"})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := c.ListForeign(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Err != nil && len(rs) == 0 {
		t.Errorf("ClaimPartitions(bob, g/0) = %v, but ListForeign(g) = %+v: a partition no process runs blocks bob, and nothing lists it to free", res[0].Err, rs)
	}
}
