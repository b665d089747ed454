package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
)

// TestRenewMemberOfRowMovedToAnotherGroup: a live member's row whose grp
// was edited by hand to another group is no longer that member's
// membership: its renewal is lost. Were it renewed, the row would live on
// in the other group for as long as the first group's process renews.
// (The moved row is no member of the other group either, and a foreign
// record there: see partitiontest's MovedMembership.)
func TestRenewMemberOfRowMovedToAnotherGroup(t *testing.T) {
	t.Parallel()
	c := open(t, newDB(t))
	ctx := ctxFor(t, 30*time.Second)
	m, err := c.JoinGroup(ctx, "g", "alice#1", 10*time.Second, 2)
	if err != nil {
		t.Fatal(err)
	}
	members := c.Table()[:len(c.Table())-1] + `_members"`
	if _, err := c.Pool().Exec(ctx, `UPDATE `+members+` SET grp = 'h' WHERE epoch = $1`, int64(m.Epoch)); err != nil {
		t.Fatal(err)
	}
	if ms, err := c.GroupMembers(ctx, "h"); err != nil || len(ms) != 0 {
		t.Fatalf("GroupMembers(h) = %v, %v; want none: the moved row is no member", ms, err)
	}
	if _, err := c.RenewMember(ctx, m); !errors.Is(err, tenure.ErrLost) {
		t.Errorf("RenewMember(%v) of its row moved to group h = %v; want tenure.ErrLost", m, err)
	}
}
