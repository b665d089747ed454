package postgres_test

import (
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/partition"
	"github.com/tenure-dev/tenure/partition/partitiontest"

	"github.com/tenure-dev/tenure"
)

// TestOneOwnerPerKeyAcrossAPIs: a partition's key (group/name) has one
// owner, whichever API asks. A single-key Acquire of a live partition is
// refused, naming the key and the group; a claim of a partition whose key
// an Elector holds is refused; once the owner is gone, the other API takes
// the key with a greater token. The group's name has a '/' of its own.
func TestOneOwnerPerKeyAcrossAPIs(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	partitiontest.OneOwnerPerKey(t, open(t, dsn), `group "team/jobs"`)
}

// TestOneOwnerPerKeyRace: a member claims a partition while an Elector's
// Acquire asks for its key, both at once, round after round on fresh
// partitions: at most one of them may get it.
func TestOneOwnerPerKeyRace(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	ctx := ctxFor(t, 2*time.Minute)
	member, elector := open(t, dsn), open(t, dsn)
	m, err := member.JoinGroup(ctx, "jobs", "member#1", time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	both, claims, acquires := 0, 0, 0
	for i := range 40 {
		name := strconv.Itoa(i)
		if i%2 == 1 { // the partition's row exists, ownerless, before the race
			res, err := member.ClaimPartitions(ctx, m, []string{name})
			if err != nil || res[0].Err != nil {
				t.Fatalf("ClaimPartitions(%s) = %+v, %v", name, res, err)
			}
			if err := member.ReleasePartitions(ctx, m, []tenure.Grant{res[0].Grant}); err != nil {
				t.Fatal(err)
			}
		}
		var claimErr, acquireErr error
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			var res []partition.ClaimResult
			if res, claimErr = member.ClaimPartitions(ctx, m, []string{name}); claimErr == nil {
				claimErr = res[0].Err
			}
		}()
		go func() {
			defer wg.Done()
			<-start
			_, acquireErr = elector.Acquire(ctx, "jobs/"+name, "elector#1", time.Minute)
		}()
		close(start)
		wg.Wait()
		for _, err := range []error{claimErr, acquireErr} {
			if err != nil && !errors.Is(err, tenure.ErrHeld) {
				t.Fatalf("round %d: %v; want a grant or a *tenure.HeldError", i, err)
			}
		}
		switch {
		case claimErr == nil && acquireErr == nil:
			both++
			t.Errorf("round %d: partition jobs/%s claimed by member#1 and acquired by elector#1 at once", i, name)
		case claimErr == nil:
			claims++
		case acquireErr == nil:
			acquires++
		}
	}
	t.Logf("40 races: %d to the claim, %d to the Acquire, %d to both", claims, acquires, both)
}
