package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
)

// TestForeignMemberRowNamingALiveMember: a membership row written by hand
// in group g that names live member a ("a#1": its ID, not its epoch), ends
// two days ahead and owns partition g/1 (its row written by hand too),
// while a owns g/0. ListForeign lists g/1 and the row, never g/0;
// RemoveForeign of each record deletes the planted row alone: a stays a
// member that renews and keeps g/0 (CheckPartitions reports nothing lost,
// b's claim of it is refused), and b then takes g/1 with a token above the
// planted row's.
func TestForeignMemberRowNamingALiveMember(t *testing.T) {
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
	base := c.Table()[:len(c.Table())-1]
	const ghostEpoch, ghostToken = 7, int64(1) << 60 // above the clock in µs
	if _, err := c.Pool().Exec(ctx, `INSERT INTO `+base+`_members" (epoch, grp, member, ttl_us, expires_at, partitions, joined_grp)
OVERRIDING SYSTEM VALUE VALUES ($1, 'g', 'a#1', 10000000, now() + interval '2 days', 2, 'g');
`, ghostEpoch); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pool().Exec(ctx, `INSERT INTO `+base+`_partitions" (grp, name, owner_epoch, fencing_token) VALUES ('g', '1', $1, $2)`, ghostEpoch, ghostToken); err != nil {
		t.Fatal(err)
	}

	rs, err := c.ListForeign(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var part, row bool
	for _, r := range rs {
		switch {
		case r.Key == "g/1" && r.Member == "" && r.Token == uint64(ghostToken):
			part = true
		case r.Key == "g" && r.Member == "a#1" && r.Token == ghostEpoch:
			row = true
		default:
			t.Errorf("ListForeign() lists %+v; want only g/1 and the planted row (a, live, owns g/0 at token %d)", r, ga.Grant.Token)
		}
	}
	if !part || !row {
		t.Errorf("ListForeign() = %+v; want g/1 at token %d and the row of epoch %d", rs, ghostToken, ghostEpoch)
	}
	for _, r := range rs {
		if _, err := c.RemoveForeign(ctx, r); err != nil {
			t.Errorf("RemoveForeign(%+v) = %v", r, err)
		}
	}
	if a, err = c.RenewMember(ctx, a); err != nil {
		t.Fatalf("RenewMember(a) after RemoveForeign of the row naming it = %v; want a live", err)
	}
	if lost, err := c.CheckPartitions(ctx, a, []tenure.Grant{ga.Grant}); err != nil || len(lost) != 0 {
		t.Errorf("CheckPartitions(a, g/0) = lost %v, %v; want nothing lost", lost, err)
	}
	res, err := c.ClaimPartitions(ctx, b, []string{"0", "1"})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res[0].Err, tenure.ErrHeld) {
		t.Errorf("claim of g/0 by b = %+v; want it refused naming a", res[0])
	}
	if res[1].Err != nil || res[1].Grant.Token <= uint64(ghostToken) {
		t.Errorf("claim of g/1 by b = %+v; want a grant above the planted row's token %d", res[1], ghostToken)
	}
	if left, err := c.ListForeign(ctx, ""); err != nil || len(left) != 0 {
		t.Errorf("ListForeign() after RemoveForeign = %+v, %v; want none", left, err)
	}
}
