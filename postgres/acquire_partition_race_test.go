package postgres_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/partition"
	"github.com/tenure-dev/tenure/postgres"
)

// heldSpan is a stretch of time in which the database said, at both ends,
// that holder held key with token: from the return of the first check to the
// sending of the second.
type heldSpan struct {
	holder     string
	token      uint64
	start, end time.Time
}

// TestAcquirePartitionRace races single-key Acquires of a partition's key
// against members that join, claim it, check it, renew, release it, leave,
// and an admin that deletes membership rows by hand. Every
// holder checks its hold with the coordinator's own answers (Leader for a
// single key, CheckPartitions for a partition) before and after a short
// hold: no two such spans may overlap, and in the order they began their
// tokens must increase.
func TestAcquirePartitionRace(t *testing.T) {
	t.Parallel()
	raceAcquirePartition(t, false, `DELETE FROM public.cluster_leadership_members WHERE grp = 'g'`)
}

// TestAcquirePartitionRaceFreshCoordinators is TestAcquirePartitionRace
// with a new Coordinator for each single-key Acquire, which has not yet
// seen the group tables: its Acquire of a key whose row a single-key grant
// wrote last is the one statement that leaves the partition's row unread.
func TestAcquirePartitionRaceFreshCoordinators(t *testing.T) {
	t.Parallel()
	raceAcquirePartition(t, true, `DELETE FROM public.cluster_leadership_members WHERE grp = 'g'`)
}

// raceFor is how long the race of raceAcquirePartition runs at least;
// raceLimit, at most, waiting for both kinds of holder to hold the key.
const raceFor, raceLimit = 8 * time.Second, 90 * time.Second

// raceAcquirePartition runs the race, the admin running deletions in turn;
// with fresh, each single-key Acquire is a new Coordinator's first.
func raceAcquirePartition(t *testing.T, fresh bool, deletions ...string) {
	dsn := newDB(t)
	ctx := ctxFor(t, 3*time.Minute)
	setup := open(t, dsn)
	m0, err := setup.JoinGroup(ctx, "g", "setup", time.Minute, 0) // the group tables exist
	if err != nil {
		t.Fatal(err)
	}
	if err := setup.LeaveGroup(ctx, m0); err != nil {
		t.Fatal(err)
	}
	key := partition.Key("g", "0")
	var mu sync.Mutex
	var spans []heldSpan
	held := map[bool]bool{} // by kind: single-key or partition
	record := func(s heldSpan) {
		mu.Lock()
		defer mu.Unlock()
		spans = append(spans, s)
		held[s.holder[:6] == "single"] = true
	}
	bothHeld := func() bool { mu.Lock(); defer mu.Unlock(); return held[true] && held[false] }
	hold := func() { time.Sleep(5 * time.Millisecond) }
	// sparse is set once raceFor has passed and the members have not yet
	// held the key: under load a member's join and claim can take longer
	// than the gaps the single-key holders and the admin leave, so from then
	// on both leave wider gaps. The race and its checks run on unchanged.
	var sparse atomic.Bool
	gap := func(d time.Duration) {
		if sparse.Load() {
			d *= 10
		}
		time.Sleep(d)
	}

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	for i := range 2 {
		shared := open(t, dsn)
		wg.Add(1)
		go func() { // single-key holders
			defer wg.Done()
			for runCtx.Err() == nil {
				c := shared
				if fresh {
					var err error
					if c, err = postgres.New(runCtx, shared.Pool()); err != nil {
						continue
					}
				}
				g, err := c.Acquire(runCtx, key, fmt.Sprintf("single-%d", i), 5*time.Second)
				if fresh {
					c.Close() // Release needs only the pool: use shared
					c = shared
				}
				if err != nil {
					continue
				}
				if l, ok, err := c.Leader(runCtx, key); err == nil && ok && l.Token == g.Token && l.Holder == g.Holder {
					s := heldSpan{holder: g.Holder, token: g.Token, start: time.Now()}
					hold()
					s.end = time.Now()
					if l, ok, err := c.Leader(runCtx, key); err == nil && ok && l.Token == g.Token && l.Holder == g.Holder {
						record(s)
					}
				}
				_ = c.Release(runCtx, g)
				gap(15 * time.Millisecond) // room for members' claims
			}
		}()
	}
	for i := range 2 {
		c := open(t, dsn)
		wg.Add(1)
		go func() { // members
			defer wg.Done()
			for n := 0; runCtx.Err() == nil; n++ {
				m, err := c.JoinGroup(runCtx, "g", fmt.Sprintf("member-%d", i), 5*time.Second, 0)
				if err != nil {
					continue
				}
				time.Sleep(120 * time.Millisecond) // SLOW PLANT
				for r := 0; r < 3 && runCtx.Err() == nil; r++ {
					res, err := c.ClaimPartitions(runCtx, m, []string{"0"})
					if err != nil || res[0].Err != nil {
						break
					}
					g := res[0].Grant
					if lost, err := c.CheckPartitions(runCtx, m, []tenure.Grant{g}); err == nil && len(lost) == 0 {
						s := heldSpan{holder: m.ID, token: g.Token, start: time.Now()}
						hold()
						s.end = time.Now()
						if lost, err := c.CheckPartitions(runCtx, m, []tenure.Grant{g}); err == nil && len(lost) == 0 {
							record(s)
						}
					}
					switch (n + r) % 3 {
					case 0:
						_ = c.ReleasePartitions(runCtx, m, []tenure.Grant{g})
					case 1:
						m, _ = c.RenewMember(runCtx, m)
					}
				}
				_ = c.LeaveGroup(runCtx, m)
			}
		}()
	}
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	// The race runs raceFor, and on until both kinds have held the key: on a
	// loaded machine the members may not win it within raceFor (the check
	// below fails if they never do within raceLimit).
	for n, began := 0, time.Now(); time.Since(began) < raceLimit && (time.Since(began) < raceFor || !bothHeld()); n++ {
		stmt := deletions[n%len(deletions)] // an admin's deletions by hand
		_, _ = admin.Exec(runCtx, stmt)
		if time.Since(began) >= raceFor && !bothHeld() {
			sparse.Store(true)
		}
		gap(20 * time.Millisecond)
	}
	stop()
	wg.Wait()

	sort.Slice(spans, func(i, j int) bool { return spans[i].start.Before(spans[j].start) })
	kinds := map[bool]int{}
	var last heldSpan // of the spans so far, the one that ends last
	for i, s := range spans {
		kinds[s.holder[:6] == "single"]++
		if i > 0 && s.start.Before(last.end) {
			t.Errorf("%s (token %d) held %s from %v, while %s (token %d) held it until %v",
				s.holder, s.token, key, s.start.Format("15:04:05.000000"), last.holder, last.token, last.end.Format("15:04:05.000000"))
		}
		if i > 0 && s.token <= spans[i-1].token {
			t.Errorf("%s's token %d after %s's %d: tokens must increase", s.holder, s.token, spans[i-1].holder, spans[i-1].token)
		}
		if s.end.After(last.end) {
			last = s
		}
	}
	t.Logf("%d checked spans: %d single-key, %d partition", len(spans), kinds[true], kinds[false])
	if kinds[true] == 0 || kinds[false] == 0 {
		t.Errorf("spans: %d single-key, %d partition; want both kinds to have held the key", kinds[true], kinds[false])
	}
}
