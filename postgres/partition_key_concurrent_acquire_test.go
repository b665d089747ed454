// Two Acquires of one holder at once, on new Coordinators or on one, of a
// partition's key that a member owns: each finds the group tables (a new
// Coordinator has not seen them yet) and must be refused; neither may be
// granted on the strength of the other's attempt.
// (A one-statement re-acquisition of a row that names a holder failed this
// test within 6 iterations: "call 2 of holder S was granted g/0@... while
// member m holds partition 0".)

package postgres_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/postgres"
)

// TestRetractedGrantReacquiredOverPartition: member m owns partition 0 of
// g; two Acquires of g/0 by holder S, at nearly the same time, again and
// again for up to 20 s: from two processes (each with a new Coordinator on
// its own pool), and from two goroutines of one new Coordinator. Neither may
// be granted it.
func TestRetractedGrantReacquiredOverPartition(t *testing.T) {
	t.Parallel()
	for _, shared := range []bool{false, true} {
		name := "two processes"
		if shared {
			name = "one Coordinator"
		}
		t.Run(name, func(t *testing.T) { raceRetractedGrant(t, shared) })
	}
}

// raceRetractedGrant runs the race; with shared, both calls are one new
// Coordinator's.
func raceRetractedGrant(t *testing.T, shared bool) {
	dsn := newDB(t)
	c := open(t, dsn)
	ctx := ctxFor(t, time.Minute)
	m, err := c.JoinGroup(ctx, "g", "m", time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	tok := claim(t, c, m)
	p1, p2 := open(t, dsn), open(t, dsn)
	deadline := time.Now().Add(10 * time.Second)
	n := 0
	for ; time.Now().Before(deadline); n++ {
		var fs [2]*postgres.Coordinator
		for i, p := range []*postgres.Coordinator{p1, p2} {
			if fs[i], err = postgres.New(ctx, p.Pool()); err != nil {
				t.Fatal(err)
			}
		}
		closeAll := func() { fs[0].Close(); fs[1].Close() }
		calls := fs
		if shared {
			calls[1] = fs[0]
		}
		var wg sync.WaitGroup
		var gs [2]tenure.Grant
		var errs [2]error
		for i, f := range calls {
			d := time.Duration(0)
			if i == 1 {
				d = time.Duration(rand.IntN(3000)) * time.Microsecond
			}
			wg.Go(func() {
				time.Sleep(d)
				gs[i], errs[i] = f.Acquire(context.Background(), "g/0", "S", time.Minute)
			})
		}
		wg.Wait()
		closeAll()
		for i := range 2 {
			if errs[i] == nil {
				lost, err := c.CheckPartitions(ctx, m, []tenure.Grant{{Key: "g/0", Holder: m.ID, Token: tok, TTL: time.Minute, Sent: tenure.Now()}})
				t.Fatalf("iteration %d: call %d of holder S was granted %v while member m holds partition 0 with %d (CheckPartitions lost %v, %v)", n, i+1, gs[i], tok, lost, err)
			}
		}
	}
	t.Logf("%d iterations", n)
}
