package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/partition"
)

// TestPartitionOwnedByAnotherGroupsMember: a partition row of group g
// whose owner_epoch names a membership row of group h (edited by hand, or
// left by a membership row moved to h) is no partition of that member's:
// while the row is live, GroupPartitions(g) leaves the partition out,
// claims are refused, ListForeign lists it and RemoveForeign frees it
// without touching h's member; once the row has expired, a claim of g
// takes the partition (its expired owner of another group is reaped as g's
// own are), with a greater token.
func TestPartitionOwnedByAnotherGroupsMember(t *testing.T) {
	t.Parallel()
	c := open(t, newDB(t))
	ctx := ctxFor(t, 30*time.Second)
	join := func(group, id string) partition.Member {
		m, err := c.JoinGroup(ctx, group, id, 30*time.Second, 2)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	a, b, x, y := join("g", "a#1"), join("g", "b#1"), join("h", "x#1"), join("h", "y#1")
	res, err := c.ClaimPartitions(ctx, a, []string{"0", "1"})
	if err != nil || res[0].Err != nil || res[1].Err != nil {
		t.Fatalf("ClaimPartitions(0, 1) = %+v, %v", res, err)
	}
	partitions := c.Table()[:len(c.Table())-1] + `_partitions"`
	members := c.Table()[:len(c.Table())-1] + `_members"`
	for name, m := range map[string]partition.Member{"0": x, "1": y} {
		if _, err := c.Pool().Exec(ctx, `UPDATE `+partitions+` SET owner_epoch = $1 WHERE grp = 'g' AND name = $2`, int64(m.Epoch), name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Pool().Exec(ctx, `UPDATE `+members+` SET expires_at = now() - interval '1 second' WHERE epoch = $1`, int64(y.Epoch)); err != nil {
		t.Fatal(err)
	}

	if gs, err := c.GroupPartitions(ctx, "g"); err != nil || len(gs) != 0 {
		t.Errorf("GroupPartitions(g) = %v, %v; want none: g/0 is owned by a member of h, g/1 by an expired one", gs, err)
	}
	r := claimOne(t, c, b, "1")
	if r.Err != nil || r.Grant.Token <= res[1].Grant.Token {
		t.Errorf("claim of g/1, owned by an expired member of h = %+v; want a grant with a token > %d", r, res[1].Grant.Token)
	}
	if r := claimOne(t, c, b, "0"); !errors.Is(r.Err, tenure.ErrHeld) {
		t.Errorf("claim of g/0, owned by a live member of h = %+v; want it refused while that member lives", r)
	}
	rs, err := c.ListForeign(ctx, "g/")
	if err != nil || len(rs) != 1 || rs[0].Key != "g/0" || rs[0].Holder != x.ID || rs[0].Token != res[0].Grant.Token || rs[0].Member != "" {
		t.Fatalf("ListForeign(g/) = %+v, %v; want g/0, held by %s of group h, token %d", rs, err, x.ID, res[0].Grant.Token)
	}
	if removed, err := c.RemoveForeign(ctx, rs[0]); !removed || err != nil {
		t.Fatalf("RemoveForeign(%+v) = %v, %v; want true, nil", rs[0], removed, err)
	}
	if r := claimOne(t, c, b, "0"); r.Err != nil || r.Grant.Token <= res[0].Grant.Token {
		t.Errorf("claim of g/0 after RemoveForeign = %+v; want a grant with a token > %d", r, res[0].Grant.Token)
	}
	if _, err := c.RenewMember(ctx, x); err != nil {
		t.Errorf("RenewMember(%s) after RemoveForeign of a partition of g naming it = %v; want it still a member of h", x, err)
	}
}

func claimOne(t *testing.T, c partition.Coordinator, m partition.Member, name string) partition.ClaimResult {
	t.Helper()
	res, err := c.ClaimPartitions(ctxFor(t, 30*time.Second), m, []string{name})
	if err != nil {
		t.Fatalf("ClaimPartitions(%s, %s) error = %v", m, name, err)
	}
	return res[0]
}
