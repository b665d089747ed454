package postgres_test

import (
	"slices"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
)

// TestForeignMemberRowWithoutJoinedGroup: a membership row written by hand
// without joined_grp (NULL), naming a holder identity, ending two days
// ahead and owning a partition row written by hand, is no member:
// GroupMembers leaves it out, claims are refused its partition, and
// ListForeign lists both the row and its partition; RemoveForeign of the
// partition record deletes the row, and the next claim takes the partition
// with a greater token while the live member stays.
func TestForeignMemberRowWithoutJoinedGroup(t *testing.T) {
	t.Parallel()
	c := open(t, newDB(t))
	ctx := ctxFor(t, 30*time.Second)
	alice, err := c.JoinGroup(ctx, "g", "alice#00000001", 10*time.Second, 2)
	if err != nil {
		t.Fatal(err)
	}
	members := c.Table()[:len(c.Table())-1] + `_members"`
	parts := c.Table()[:len(c.Table())-1] + `_partitions"`
	var ghost int64
	if err := c.Pool().QueryRow(ctx, `INSERT INTO `+members+` (grp, member, ttl_us, expires_at, partitions)
VALUES ('g', 'ghost#00000009', 10000000, now() + interval '2 days', 2) RETURNING epoch`).Scan(&ghost); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pool().Exec(ctx, `INSERT INTO `+parts+` (grp, name, owner_epoch, fencing_token) VALUES ('g', '0', $1, 7)`, ghost); err != nil {
		t.Fatal(err)
	}
	if ms, err := c.GroupMembers(ctx, "g"); err != nil || len(ms) != 1 || ms[0].ID != alice.ID {
		t.Fatalf("GroupMembers(g) = %+v, %v; want alice only", ms, err)
	}
	if res, err := c.ClaimPartitions(ctx, alice, []string{"0"}); err != nil || res[0].Err == nil {
		t.Fatalf("ClaimPartitions(g/0) = %+v, %v; want refused while the foreign row lives", res, err)
	}
	rs, err := c.ListForeign(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(rs, func(r tenure.ForeignRecord) bool { return r.Key == "g/0" && r.Token == 7 && r.Member == "" })
	if i < 0 || !slices.ContainsFunc(rs, func(r tenure.ForeignRecord) bool { return r.Key == "g" && r.Member == "ghost#00000009" }) {
		t.Fatalf("ListForeign(g) = %+v; want g/0 at token 7 and ghost's membership row", rs)
	}
	if ok, err := c.RemoveForeign(ctx, rs[i]); !ok || err != nil {
		t.Fatalf("RemoveForeign(%+v) = %v, %v; want true, nil", rs[i], ok, err)
	}
	res, err := c.ClaimPartitions(ctx, alice, []string{"0"})
	if err != nil || res[0].Err != nil || res[0].Grant.Token <= 7 {
		t.Fatalf("ClaimPartitions(g/0) after RemoveForeign = %+v, %v; want a token above 7", res, err)
	}
	if left, err := c.ListForeign(ctx, ""); err != nil || len(left) != 0 {
		t.Errorf("ListForeign(\"\") after RemoveForeign = %+v, %v; want none", left, err)
	}
	if ms, err := c.GroupMembers(ctx, "g"); err != nil || len(ms) != 1 || ms[0].ID != alice.ID {
		t.Errorf("GroupMembers(g) after RemoveForeign = %+v, %v; want alice", ms, err)
	}
}
