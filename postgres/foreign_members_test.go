package postgres_test

import (
	"slices"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/partition"
)

// TestForeignMembershipRows: a membership row no member wrote as it stands
// (a live member's row whose expires_at someone set to infinity, or one
// more than a day ahead naming a member that is not a holder identity) is
// no member and owns no partition as GroupPartitions reads it;
// ListForeign lists the partitions it owns, with their tokens; a
// RemoveForeign with another token or after the row renewed into a grant
// again removes nothing; RemoveForeign deletes the row, and the next
// claim's token is greater.
func TestForeignMembershipRows(t *testing.T) {
	t.Parallel()
	c := open(t, newDB(t))
	ctx := ctxFor(t, 30*time.Second)
	join := func(id string, name string) (partition.Member, uint64) {
		m, err := c.JoinGroup(ctx, "g", id, 10*time.Second, 4)
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.ClaimPartitions(ctx, m, []string{name})
		if err != nil || res[0].Err != nil {
			t.Fatalf("ClaimPartitions(%s) = %+v, %v", name, res, err)
		}
		return m, res[0].Grant.Token
	}
	stuck, t0 := join("mallory#00000000", "0")
	odd, t1 := join("odd#00000000", "1")
	live, _ := join("alice#00000001", "2")
	members := c.Table()[:len(c.Table())-1] + `_members"`
	if _, err := c.Pool().Exec(ctx, `UPDATE `+members+` SET expires_at = 'infinity' WHERE epoch = $1`, int64(stuck.Epoch)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pool().Exec(ctx, `UPDATE `+members+` SET member = 'bad'||chr(1), expires_at = now() + interval '2 days' WHERE epoch = $1`, int64(odd.Epoch)); err != nil {
		t.Fatal(err)
	}
	ms, err := c.GroupMembers(ctx, "g")
	if err != nil || len(ms) != 1 || ms[0].ID != live.ID {
		t.Fatalf("GroupMembers(g) = %+v, %v; want alice only", ms, err)
	}
	gs, err := c.GroupPartitions(ctx, "g")
	if err != nil || len(gs) != 1 || gs[0].Key != "g/2" {
		t.Fatalf("GroupPartitions(g) = %+v, %v; want g/2 only", gs, err)
	}
	rs, err := c.ListForeign(ctx, "g/")
	if err != nil || len(rs) != 2 || rs[0].Key != "g/0" || rs[0].Token != t0 || rs[0].TTL >= 0 || rs[0].Malformed ||
		rs[1].Key != "g/1" || rs[1].Token != t1 || !rs[1].Malformed || rs[1].TTL <= 0 {
		t.Fatalf("ListForeign(g/) = %+v, %v; want g/0 (foreign, never ends, token %d) and g/1 (malformed, token %d)", rs, err, t0, t1)
	}
	for _, r := range rs {
		stale := r
		stale.Token++
		if ok, err := c.RemoveForeign(ctx, stale); ok || err != nil {
			t.Errorf("RemoveForeign(%+v) = %v, %v; want false, nil: another token", stale, ok, err)
		}
	}
	// mallory's row renewed into a grant again: not foreign any more.
	if _, err := c.Pool().Exec(ctx, `UPDATE `+members+` SET expires_at = now() + interval '10 seconds' WHERE epoch = $1`, int64(stuck.Epoch)); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.RemoveForeign(ctx, rs[0]); ok || err != nil {
		t.Errorf("RemoveForeign(%+v) of a row renewed since = %v, %v; want false, nil", rs[0], ok, err)
	}
	if ok, err := c.RemoveForeign(ctx, rs[1]); !ok || err != nil {
		t.Fatalf("RemoveForeign(%+v) = %v, %v; want true, nil", rs[1], ok, err)
	}
	res, err := c.ClaimPartitions(ctx, live, []string{"0", "1"})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Err == nil {
		t.Errorf("ClaimPartitions(g/0) took mallory's live partition: %+v", res[0])
	}
	if res[1].Err != nil || res[1].Grant.Token <= t1 {
		t.Errorf("ClaimPartitions(g/1) after RemoveForeign = %+v; want a token above %d", res[1], t1)
	}
	if ms, _ := c.GroupMembers(ctx, "g"); !slices.ContainsFunc(ms, func(m partition.Member) bool { return m.ID == stuck.ID }) {
		t.Errorf("GroupMembers(g) = %+v; want mallory back, its row renewed", ms)
	}
}
