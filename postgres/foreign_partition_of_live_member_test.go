package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/termcheck"
	"github.com/tenure-dev/tenure/partition"

	"github.com/tenure-dev/tenure"
)

// TestForeignPartitionOfLiveMember: a partition row written by hand whose
// owner_epoch names a live member of its own group that never claimed it
// is that member's partition as the database stands: nothing in the row
// tells it from one the member claimed (a claim applied after its call
// failed leaves such a row too, which its member does not run). So bob's claim is refused naming
// alice and the row's token, and ListForeign does not list it (a listing
// would offer to free a partition a live member may run); GroupPartitions
// lists it as alice's, at the row's token, which is what alice's runner
// reads to free it (ReleasePartitions of that grant) or adopt it (a claim,
// with a token above the row's): either way bob, or alice, then holds it
// with a greater token. TestUnrunPartitionOfLiveMemberFreed checks that
// the runner does so, within a bound.
func TestForeignPartitionOfLiveMember(t *testing.T) {
	t.Parallel()
	for _, adopt := range []bool{false, true} {
		t.Run(map[bool]string{false: "released", true: "adopted"}[adopt], func(t *testing.T) {
			t.Parallel()
			c, ctx, alice, bob := aliceAndBob(t)
			parts := groupTable(c, "partitions")
			if _, err := c.Pool().Exec(ctx, `INSERT INTO `+parts+` (grp, name, owner_epoch, fencing_token) VALUES ('g', '0', $1, 7)`, int64(alice.Epoch)); err != nil {
				t.Fatal(err)
			}
			var held *tenure.HeldError
			if res, err := c.ClaimPartitions(ctx, bob, []string{"0"}); err != nil || !errors.As(res[0].Err, &held) || held.Holder != alice.ID || held.Token != 7 {
				t.Fatalf("ClaimPartitions(bob, g/0) = %+v, %v; want a *HeldError naming %s at token 7", res, err, alice.ID)
			}
			if rs, err := c.ListForeign(ctx, ""); err != nil || len(rs) != 0 {
				t.Errorf("ListForeign(\"\") = %+v, %v; want none: the row is alice's as far as the database can tell", rs, err)
			}
			gs, err := c.GroupPartitions(ctx, "g")
			if err != nil || len(gs) != 1 || gs[0].Key != "g/0" || gs[0].Holder != alice.ID || gs[0].Token != 7 {
				t.Fatalf("GroupPartitions(g) = %+v, %v; want g/0 held by %s at token 7", gs, err, alice.ID)
			}
			taker := bob
			if adopt {
				taker = alice
			} else if err := c.ReleasePartitions(ctx, alice, gs); err != nil {
				t.Fatalf("ReleasePartitions(alice, %+v) error = %v", gs, err)
			}
			res, err := c.ClaimPartitions(ctx, taker, []string{"0"})
			if err != nil || res[0].Err != nil || res[0].Grant.Token <= 7 || res[0].Grant.Holder != taker.ID {
				t.Errorf("ClaimPartitions(%s, g/0) = %+v, %v; want a grant with a token above 7", taker.ID, res, err)
			}
		})
	}
}

// TestUnrunPartitionOfLiveMemberFreed runs two members of a 4-partition
// group, a and b, until each runs two, then gives b's partitions to a's
// membership by hand, at token 7: partitions a owns and does not run. b
// loses them at its next check; a's runner, at its next read of the
// partition table (at most 15 renewal intervals, 5 TTLs, after its last),
// claims those the balance gives it (their tokens then above the row's)
// and releases the others (an orphan: owned, not run, not its to run), and
// b claims them. Every partition of b must run again, with a token above
// the one it had, within 5 TTLs and a slack for a loaded machine, and
// termcheck judges every act: no term passes Check after a greater token
// of its partition did, nor while another term of it does.
func TestUnrunPartitionOfLiveMemberFreed(t *testing.T) {
	t.Parallel()
	const ttl = 2 * time.Second
	dsn := newDB(t)
	l := termcheck.New()
	var mu sync.Mutex
	started := map[string][]run{} // by key
	fn := func(who string) partition.Func {
		return func(ctx context.Context, p partition.Partition, term *tenure.Term) error {
			defer l.Run(p.Key, who, term)()
			mu.Lock()
			started[p.Key] = append(started[p.Key], run{who, term.Token(), time.Now()})
			mu.Unlock()
			for ctx.Err() == nil {
				l.Act(p.Key, who, term)
				time.Sleep(5 * time.Millisecond)
			}
			return nil
		}
	}
	logs := &lockedBuffer{}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	ids := map[string]string{}
	for _, who := range []string{"a", "b"} {
		cfg := partition.DefaultConfig()
		cfg.Key, cfg.Partitions, cfg.Holder, cfg.Instance = "jobs", 4, who, "1"
		cfg.TTL, cfg.Margin = ttl, 200*time.Millisecond
		cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
		g, err := partition.New(open(t, dsn), cfg)
		if err != nil {
			t.Fatal(err)
		}
		ids[who] = g.Identity()
		wg.Go(func() { _ = g.Run(ctx, fn(who)) })
	}
	c := open(t, dsn)
	qctx := ctxFor(t, 2*time.Minute)
	// Wait for the group to settle: two partitions each, each running
	// with the token the table lists.
	var owners map[string]string
	before := map[string]uint64{} // the token each partition runs with, by key
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		gs, err := c.GroupPartitions(qctx, "jobs")
		owners, before = map[string]string{}, map[string]uint64{}
		count, running := map[string]int{}, 0
		mu.Lock()
		for _, g := range gs {
			owners[g.Key[len("jobs/"):]] = g.Holder
			before[g.Key] = g.Token
			count[g.Holder]++
			if rs := started[g.Key]; len(rs) > 0 && rs[len(rs)-1].token == g.Token && ids[rs[len(rs)-1].who] == g.Holder {
				running++
			}
		}
		mu.Unlock()
		if err == nil && count[ids["a"]] == 2 && count[ids["b"]] == 2 && running == 4 {
			break
		}
		if time.Now().After(deadline) {
			mu.Lock()
			ran := runs(started, time.Now())
			mu.Unlock()
			t.Fatalf("the group did not settle in a minute: GroupPartitions(jobs) = %+v, %v; runs: %s", gs, err, ran)
		}
	}
	var bs []string
	for n, who := range owners {
		if who == ids["b"] {
			bs = append(bs, n)
			owners[n] = ids["a"]
		}
	}
	slices.Sort(bs)
	target := partition.Rebalance([]string{"0", "1", "2", "3"}, []string{ids["a"], ids["b"]}, owners)
	orphans := slices.DeleteFunc(slices.Clone(bs), func(n string) bool { return target[n] != ids["b"] })
	if len(orphans) == 0 {
		t.Fatalf("the balance of the table with b's partitions %v given to a is %v: a adopts them all, and no orphan is left to check", bs, target)
	}
	members := groupTable(c, "members")
	parts := groupTable(c, "partitions")
	tag, err := c.Pool().Exec(qctx, `UPDATE `+parts+` SET owner_epoch = (SELECT epoch FROM `+members+` WHERE member = $1 AND expires_at > now() ORDER BY epoch DESC LIMIT 1), fencing_token = 7
WHERE grp = 'jobs' AND name = ANY($2)`, ids["a"], bs)
	if err != nil || tag.RowsAffected() != int64(len(bs)) {
		t.Fatalf("giving b's partitions %v to a by hand: %v, %v", bs, tag, err)
	}
	edited := time.Now()
	bound := 5*ttl + 10*time.Second // a's next table read, and slack for a loaded machine
	waiting := slices.Clone(bs)
	for len(waiting) > 0 && time.Since(edited) < bound {
		time.Sleep(50 * time.Millisecond)
		mu.Lock()
		waiting = slices.DeleteFunc(waiting, func(n string) bool {
			rs := started[partition.Key("jobs", n)]
			return slices.ContainsFunc(rs, func(r run) bool { return r.at.After(edited) && r.token > before[partition.Key("jobs", n)] })
		})
		mu.Unlock()
	}
	took := time.Since(edited)
	stop()
	wg.Wait()
	l.Verify(t)
	mu.Lock()
	defer mu.Unlock()
	if len(waiting) > 0 {
		t.Errorf("partitions %v of b, given to a by hand at token 7 (orphans of a: %v; balance %v), not run again with a greater token within %s (5 TTLs and 10s of slack); runs: %v\nlogs:\n%s",
			waiting, orphans, target, bound, runs(started, edited), logText(logs))
		return
	}
	for _, n := range bs {
		for _, r := range started[partition.Key("jobs", n)] {
			if r.token == 7 {
				t.Errorf("%s ran %s at token 7, the token written by hand", r.who, partition.Key("jobs", n))
			}
		}
	}
	t.Logf("b's partitions %v given to a by hand (orphans %v): all run again after %s (TTL %s)", bs, orphans, took.Round(time.Millisecond), ttl)
}

// A run is a term a member started: who, its token, and when.
type run struct {
	who   string
	token uint64
	at    time.Time
}

// runs formats the terms started, by key, with their times from since.
func runs(started map[string][]run, since time.Time) string {
	var out []string
	for _, key := range slices.Sorted(maps.Keys(started)) {
		for _, r := range started[key] {
			out = append(out, fmt.Sprintf("%s by %s at token %d, %s", key, r.who, r.token, r.at.Sub(since).Round(time.Millisecond)))
		}
	}
	return strings.Join(out, "; ")
}

// logText is what logs holds.
func logText(logs *lockedBuffer) string {
	logs.mu.Lock()
	defer logs.mu.Unlock()
	return logs.b.String()
}
