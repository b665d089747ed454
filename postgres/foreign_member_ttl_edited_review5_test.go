package postgres_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/partition"
)

// TestRenewedMemberWithTTLEditedByHand: the ttl_us of live member a's
// membership row is set by hand to two days (a value no JoinGroup
// writes: a member's TTL is at most a day). a then renews. Either that
// renewal is refused (a finds out and stops), or a is a live, renewing
// member and stays one: GroupMembers lists it, and whatever ListForeign
// lists and RemoveForeign frees, a keeps g/0 (CheckPartitions reports
// nothing lost) and b's claim of g/0 is refused.
func TestRenewedMemberWithTTLEditedByHand(t *testing.T) {
	t.Parallel()
	c := open(t, newDB(t))
	ctx := ctxFor(t, 30*time.Second)
	a, err := c.JoinGroup(ctx, "g", "a#1", 10*time.Second, 2)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.JoinGroup(ctx, "g", "b#1", 10*time.Second, 2)
	if err != nil {
		t.Fatal(err)
	}
	ga := claimOne(t, c, a, "0")
	if ga.Err != nil {
		t.Fatalf("claim of g/0 by a = %+v", ga)
	}
	members := c.Table()[:len(c.Table())-1] + `_members"`
	if _, err := c.Pool().Exec(ctx, `UPDATE `+members+` SET ttl_us = $2 WHERE epoch = $1`, int64(a.Epoch), (48 * time.Hour).Microseconds()); err != nil {
		t.Fatal(err)
	}
	a, err = c.RenewMember(ctx, a)
	t.Logf("RenewMember(a) after its ttl_us was set to 48h = %v, %v", a, err)
	if errors.Is(err, tenure.ErrLost) || errors.Is(err, tenure.ErrRefused) {
		return // a finds out and stops: fine
	}
	if err != nil {
		t.Fatal(err)
	}
	ms, err := c.GroupMembers(ctx, "g")
	if err != nil || !slices.ContainsFunc(ms, func(m partition.Member) bool { return m.Epoch == a.Epoch }) {
		t.Errorf("GroupMembers(g) = %v, %v; want a, live and renewing, among them", ms, err)
	}
	rs, err := c.ListForeign(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		ok, err := c.RemoveForeign(ctx, r)
		t.Logf("ListForeign: %+v; RemoveForeign = %v, %v", r, ok, err)
	}
	if lost, err := c.CheckPartitions(ctx, a, []tenure.Grant{ga.Grant}); err != nil || len(lost) != 0 {
		t.Errorf("CheckPartitions(a, g/0 at %d) = lost %v, %v; want nothing lost: a renewed %v ago", ga.Grant.Token, lost, err, time.Since(a.Sent.Time()).Round(time.Millisecond))
	}
	if r := claimOne(t, c, b, "0"); !errors.Is(r.Err, tenure.ErrHeld) {
		t.Errorf("claim of g/0 by b = %+v; want it refused naming a, whose renewal says it holds its membership for %v more: two owners of one partition", r, a.TTL)
	}
}
