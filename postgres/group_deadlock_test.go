package postgres_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tenure-dev/tenure"
)

// isDeadlock reports whether err is PostgreSQL's SQLSTATE 40P01.
func isDeadlock(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "40P01"
}

// isSerializationFailure reports whether err is PostgreSQL's SQLSTATE 40001.
func isSerializationFailure(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "40001"
}

// TestClaimAndReleaseNeverDeadlock: members claim overlapping random sets
// of a group's partitions and release what they got, in an order of their
// own (as a caller ranging over a map does), all at once. A claim locks
// every named row, owned or not; a release locks the rows it frees. If two
// statements lock rows in different orders, PostgreSQL finds a deadlock and
// aborts one of them (SQLSTATE 40P01): a release that fails leaves its
// partitions owned by a member that stopped running them, and a claim that
// fails claims nothing. None may. (A claim refused for rows changed after
// its snapshot, each of the times it runs, is counted apart: it is the
// REPEATABLE READ check that keeps a claim from taking a live member's
// partition.)
func TestClaimAndReleaseNeverDeadlock(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	const members, partitions, rounds = 4, 48, 60
	names := make([]string, partitions)
	for i := range names {
		names[i] = strconv.Itoa(i)
	}
	var deadlocks, refused, claimed, released, otherErrs atomic.Int64
	var mu sync.Mutex
	var firstErr error
	note := func(err error) {
		switch {
		case isDeadlock(err):
			deadlocks.Add(1)
		case isSerializationFailure(err): // a claim refused for changes after its snapshot, each time it ran
			refused.Add(1)
			return
		default:
			otherErrs.Add(1)
		}
		mu.Lock()
		defer mu.Unlock()
		if firstErr == nil {
			firstErr = err
		}
	}
	ctx := ctxFor(t, 3*time.Minute)
	var wg sync.WaitGroup
	for i := range members {
		c := open(t, dsn)
		m, err := c.JoinGroup(ctx, "jobs", fmt.Sprintf("m%d#1", i), time.Minute, partitions)
		if err != nil {
			t.Fatalf("JoinGroup: %v", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			for range rounds {
				want := make([]string, 0, partitions/2)
				for _, j := range rng.Perm(partitions)[:partitions/2] {
					want = append(want, names[j])
				}
				res, err := c.ClaimPartitions(ctx, m, want)
				if err != nil {
					note(err)
					continue
				}
				var got []tenure.Grant
				for _, r := range res {
					if r.Err == nil {
						got = append(got, r.Grant)
					}
				}
				claimed.Add(int64(len(got)))
				rng.Shuffle(len(got), func(a, b int) { got[a], got[b] = got[b], got[a] })
				if err := c.ReleasePartitions(ctx, m, got); err != nil {
					note(err)
					continue
				}
				released.Add(int64(len(got)))
			}
		}()
	}
	wg.Wait()
	t.Logf("%d members × %d rounds: %d partitions claimed and released, %d deadlocks, %d claims refused for concurrent changes, %d other errors",
		members, rounds, released.Load(), deadlocks.Load(), refused.Load(), otherErrs.Load())
	if claimed.Load() < rounds {
		t.Errorf("%d partitions claimed in %d rounds of %d members: too few to contend", claimed.Load(), rounds, members)
	}
	if n := deadlocks.Load() + otherErrs.Load(); n > 0 {
		t.Errorf("%d claims or releases failed (%d deadlocks, SQLSTATE 40P01), the first: %v", n, deadlocks.Load(), firstErr)
	}
}
