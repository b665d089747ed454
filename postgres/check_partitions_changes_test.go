package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/partition"
	"github.com/tenure-dev/tenure/postgres"
)

// TestCheckPartitionsReportsEveryChangeAndNothingElse: member m owns
// partitions c0…c15 of group "jobs"; member o owns partition "o"; group
// "jobs2" has partitions of the same names, owned by o. Each partition of
// m is changed in its own way (by hand as an operator would, or through
// the API), or left alone; then m checks all its grants at once, shuffled,
// with some twice, with a grant of another group's key and one whose token
// does not fit a bigint. CheckPartitions must report exactly the grants
// whose row no longer names m's epoch and the grant's token, in the order
// given, and no other: a changed row reported still owned leaves two
// holders; an unchanged one reported lost stops a partition for nothing.
func TestCheckPartitionsReportsEveryChangeAndNothingElse(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	c := open(t, dsn)
	pool := newPool(t, dsn)
	m, o := join(ctx, t, c, "m"), join(ctx, t, c, "o")
	o2, err := c.JoinGroup(ctx, "jobs2", "o", time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 16)
	for i := range names {
		names[i] = fmt.Sprintf("c%d", i)
	}
	claimOK := func(who string, res []tenureClaim) {
		for _, r := range res {
			if r.err != nil {
				t.Fatalf("%s's claim: %v", who, r.err)
			}
		}
	}
	res := claims(ctx, t, c, m, names)
	claimOK("m", res)
	claimOK("o", claims(ctx, t, c, o, []string{"o"}))
	claimOK("o in jobs2", claims(ctx, t, c, o2, names))
	g := func(i int) tenure.Grant { return res[i].g }
	sql := func(q string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	where := ` WHERE grp = 'jobs' AND name = $1`
	// Each change, by partition; untouched ones stay m's.
	sql(`UPDATE `+partitionsTable+` SET owner_epoch = NULL`+where, "c1")
	sql(`UPDATE `+partitionsTable+` SET fencing_token = fencing_token + 1`+where, "c2")
	sql(`UPDATE `+partitionsTable+` SET fencing_token = fencing_token - 1`+where, "c3")
	sql(`DELETE FROM `+partitionsTable+where, "c4")
	sql(`UPDATE `+partitionsTable+` SET owner_epoch = $2`+where, "c5", int64(o.Epoch))
	sql(`UPDATE `+partitionsTable+` SET owner_epoch = owner_epoch + 1`+where, "c6") // an epoch no one has
	sql(`UPDATE `+partitionsTable+` SET grp = 'jobs3'`+where, "c7")
	sql(`UPDATE `+partitionsTable+` SET name = 'c7x'`+where, "c8")
	if err := c.ReleasePartitions(ctx, m, []tenure.Grant{g(9), g(10)}); err != nil {
		t.Fatal(err)
	}
	claimOK("o", claims(ctx, t, c, o, []string{"c10"}))
	sql(`DELETE FROM `+partitionsTable+where, "c11")
	claimOK("o", claims(ctx, t, c, o, []string{"c11"})) // a new row: o's, token from the clock
	again := claims(ctx, t, c, m, []string{"c12"})      // m supersedes its own grant
	claimOK("m", again)
	sql(`UPDATE `+partitionsTable+` SET fencing_token = fencing_token`+where, "c13") // rewritten unchanged
	wantLost := map[string]bool{"c1": true, "c2": true, "c3": true, "c4": true, "c5": true, "c6": true, "c7": true,
		"c8": true, "c9": true, "c10": true, "c11": true, "other/c0": true, "c14": true}
	var gs []tenure.Grant
	for i := range names {
		gs = append(gs, g(i))
	}
	gs[12] = again[0].g
	gs[14].Token = 1<<63 + gs[14].Token // does not fit PostgreSQL's bigint
	gs = append(gs, g(0), g(1), g(15), tenure.Grant{Key: "other/c0", Holder: "m", Token: g(0).Token})
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(gs), func(a, b int) { gs[a], gs[b] = gs[b], gs[a] })
	var want []tenure.Grant
	for _, gr := range gs {
		if wantLost[gr.Key] || wantLost[gr.Key[len("jobs/"):]] {
			want = append(want, gr)
		}
	}
	lost, err := c.CheckPartitions(ctx, m, gs)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(lost, want) {
		t.Errorf("CheckPartitions(%d grants) lost:\n got  %v\n want %v", len(gs), lost, want)
	}
	// m's membership changed by hand: every check reports m lost.
	for i, q := range []string{
		`UPDATE ` + membersTable + ` SET expires_at = now() - interval '1 second' WHERE epoch = $1`,
		`UPDATE ` + membersTable + ` SET member = 'someone' WHERE epoch = $1`,
		`DELETE FROM ` + membersTable + ` WHERE epoch = $1`,
	} {
		m, err := c.JoinGroup(ctx, "jobs", "m", time.Minute, 0)
		if err != nil {
			t.Fatal(err)
		}
		mine := claims(ctx, t, c, m, []string{fmt.Sprintf("n%d", i)})
		claimOK("m", mine)
		sql(q, int64(m.Epoch))
		if lost, err := c.CheckPartitions(ctx, m, []tenure.Grant{mine[0].g}); !errors.Is(err, tenure.ErrLost) {
			t.Errorf("after %q, CheckPartitions = %v, %v; want ErrLost", q, lost, err)
		}
	}
}

// tenureClaim is one result of a claim.
type tenureClaim struct {
	g   tenure.Grant
	err error
}

// claims claims names for m and returns the results.
func claims(ctx context.Context, t *testing.T, c *postgres.Coordinator, m partition.Member, names []string) []tenureClaim {
	t.Helper()
	res, err := c.ClaimPartitions(ctx, m, names)
	if err != nil {
		t.Fatalf("ClaimPartitions(%s, %v): %v", m, names, err)
	}
	out := make([]tenureClaim, len(res))
	for i, r := range res {
		out[i] = tenureClaim{r.Grant, r.Err}
	}
	return out
}
