package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/postgres"
)

// TestForeignMemberRowSharingALiveEpoch: group tables made beforehand by
// an administrator, as docs/postgresql.md allows, whose members table has
// no unique index on epoch (the shape check looks at the name columns'
// types and collations, not at epoch). Member a of group g claims g/0;
// then a membership row of group h is written by hand (or restored, or
// left by another program) with a's epoch and member "x#1". Either the
// tables are refused (ErrTableShape) before anyone joins, or the contract
// for foreign records holds: whatever ListForeign lists and RemoveForeign
// frees, a, live and renewing, keeps g/0 (CheckPartitions reports nothing
// lost) and b's claim of g/0 is refused naming a.
func TestForeignMemberRowSharingALiveEpoch(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	ctx := ctxFor(t, 30*time.Second)
	pool := newPool(t, dsn)
	if _, err := pool.Exec(ctx, `CREATE TABLE public.cluster_leadership_members (
	epoch      bigint GENERATED ALWAYS AS IDENTITY,
	grp        text NOT NULL,
	member     text NOT NULL,
	ttl_us     bigint NOT NULL,
	expires_at timestamptz NOT NULL,
	partitions integer,
	joined_grp text
);
CREATE TABLE public.cluster_leadership_partitions (
	grp           text NOT NULL,
	name          text NOT NULL,
	owner_epoch   bigint,
	fencing_token bigint NOT NULL,
	PRIMARY KEY (grp, name)
)`); err != nil {
		t.Fatal(err)
	}
	c := open(t, dsn)
	a, err := c.JoinGroup(ctx, "g", "a#1", 30*time.Second, 2)
	if errors.Is(err, postgres.ErrTableShape) {
		t.Logf("JoinGroup() = %v", err)
		return // refused as a shape tenure cannot use: fine
	}
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.JoinGroup(ctx, "g", "b#1", 30*time.Second, 2)
	if err != nil {
		t.Fatal(err)
	}
	ga := claimOne(t, c, a, "0")
	if ga.Err != nil {
		t.Fatalf("claim of g/0 by a = %+v", ga)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO public.cluster_leadership_members (epoch, grp, member, ttl_us, expires_at, partitions, joined_grp)
OVERRIDING SYSTEM VALUE VALUES ($1, 'h', 'x#1', 30000000, now() + interval '30 seconds', 2, 'h')`, int64(a.Epoch)); err != nil {
		t.Fatal(err)
	}

	rs, err := c.ListForeign(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ListForeign() = %+v", rs)
	for _, r := range rs {
		ok, err := c.RemoveForeign(ctx, r)
		t.Logf("RemoveForeign(%s held by %q, token %d) = %v, %v", r.Key, r.Holder, r.Token, ok, err)
	}
	a, err = c.RenewMember(ctx, a)
	if err != nil {
		t.Fatalf("RenewMember(a) = %v; want a's membership live", err)
	}
	if lost, err := c.CheckPartitions(ctx, a, []tenure.Grant{ga.Grant}); err != nil || len(lost) != 0 {
		t.Errorf("CheckPartitions(a, g/0 at %d) = lost %v, %v; want nothing lost: a is live, renewing, and claimed g/0", ga.Grant.Token, lost, err)
	}
	if r := claimOne(t, c, b, "0"); !errors.Is(r.Err, tenure.ErrHeld) {
		t.Errorf("claim of g/0 by b = %+v; want it refused naming a, which holds g/0 (token %d): two owners of one partition", r, ga.Grant.Token)
	}
}
