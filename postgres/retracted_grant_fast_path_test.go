//go:build openfinding

// Open finding: a new Coordinator's Acquire of a partition's key whose
// leadership row was last written by a claim grants the key with the plain
// acquisition, looks the group tables up, finds them, and retracts the
// grant (acquireOnce). Between the grant and the retraction the row names
// the holder, live; a second process of the same holder ID, on a new
// Coordinator, that acquires the key in that window takes the
// one-statement path ("AND holder_id IS NOT NULL", and the row is the
// holder's own) and is granted the key, without reading the partition
// row, while the member that owns the partition still holds it; the first
// process's retraction then finds a different token and leaves the grant.
// Two processes of one identity are a case the package already races
// (TestAdversary3ReclaimRace, b=a,x=a); two concurrent calls of one
// Coordinator for one holder do the same.
//
// Run it with:
//
//	go test -race -count=1 -tags openfinding -run TestRetractedGrantReacquiredOverPartition ./postgres/
//
// Seen (both cases red within the first 10 iterations, 3 of 3 runs):
// "iteration 1: call 2 of holder S was granted g/0@1796549717260073 by "S" (ttl 1m0s)
// while member m holds partition 0 with 1796549717149203 (CheckPartitions
// lost [], <nil>)".
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
