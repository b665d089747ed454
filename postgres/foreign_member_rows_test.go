package postgres_test

import (
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
)

// TestForeignMembershipRowsListed: a membership row that no member wrote
// as it stands and that owns no partition (its expires_at set to
// infinity) is listed by ListForeign as a record of its group's key naming
// its member, with its epoch as token, under the group's prefix only;
// RemoveForeign with another epoch, or once it is a member's row again,
// removes nothing; RemoveForeign deletes it, and the live member stays.
func TestForeignMembershipRowsListed(t *testing.T) {
	t.Parallel()
	c := open(t, newDB(t))
	ctx := ctxFor(t, 30*time.Second)
	if _, err := c.JoinGroup(ctx, "g", "alice#00000001", 10*time.Second, 2); err != nil {
		t.Fatal(err)
	}
	m, err := c.JoinGroup(ctx, "g", "mallory#00000000", 10*time.Second, 2)
	if err != nil {
		t.Fatal(err)
	}
	members := c.Table()[:len(c.Table())-1] + `_members"`
	set := func(expires string) {
		t.Helper()
		if _, err := c.Pool().Exec(ctx, `UPDATE `+members+` SET expires_at = `+expires+` WHERE epoch = $1`, int64(m.Epoch)); err != nil {
			t.Fatal(err)
		}
	}
	set("'infinity'")
	list := func(prefix string) []tenure.ForeignRecord {
		t.Helper()
		rs, err := c.ListForeign(ctx, prefix)
		if err != nil {
			t.Fatalf("ListForeign(%q) error = %v", prefix, err)
		}
		return rs
	}
	rs := list("g")
	if len(rs) != 1 || rs[0].Key != "g" || rs[0].Member != m.ID || rs[0].Token != m.Epoch || rs[0].TTL >= 0 || rs[0].Malformed {
		t.Fatalf("ListForeign(g) = %+v; want %s's membership of g with token %d, never ending", rs, m.ID, m.Epoch)
	}
	if other := list("h"); len(other) != 0 {
		t.Errorf("ListForeign(h) = %+v; want none", other)
	}
	stale := rs[0]
	stale.Token++
	if ok, err := c.RemoveForeign(ctx, stale); ok || err != nil {
		t.Errorf("RemoveForeign with another epoch = %v, %v; want false, nil", ok, err)
	}
	set("now() + interval '10 seconds'") // a member's row again
	if ok, err := c.RemoveForeign(ctx, rs[0]); ok || err != nil {
		t.Errorf("RemoveForeign of a row that a member's renewal could have written = %v, %v; want false, nil", ok, err)
	}
	set("'infinity'")
	if ok, err := c.RemoveForeign(ctx, rs[0]); !ok || err != nil {
		t.Fatalf("RemoveForeign(%+v) = %v, %v; want true, nil", rs[0], ok, err)
	}
	if left := list(""); len(left) != 0 {
		t.Errorf("ListForeign(\"\") after RemoveForeign = %+v; want none", left)
	}
	if ms, err := c.GroupMembers(ctx, "g"); err != nil || len(ms) != 1 || ms[0].ID != "alice#00000001" {
		t.Errorf("GroupMembers(g) = %+v, %v; want alice", ms, err)
	}
}
