package postgres_test

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/partition"

	"github.com/tenure-dev/tenure"
)

// TestOneOwnerPerKeyAcrossAPIs: a partition's key (group/name) has one
// owner, whichever API asks. A single-key Acquire of a live partition is
// refused, naming the key and the group; a claim of a partition whose key
// an Elector holds is refused; once the owner is gone, the other API takes
// the key with a greater token. The group's name has a '/' of its own.
func TestOneOwnerPerKeyAcrossAPIs(t *testing.T) {
	dsn := newDB(t)
	oneOwnerPerKey(t, open(t, dsn))
}

// TestOneOwnerPerKeyRace: a member claims a partition while an Elector's
// Acquire asks for its key, both at once, round after round on fresh
// partitions: at most one of them may get it.
func TestOneOwnerPerKeyRace(t *testing.T) {
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

// oneOwnerPerKey is the test's body (the same in packages memory, etcd and
// postgres).
func oneOwnerPerKey(t *testing.T, c interface {
	tenure.Coordinator
	partition.Coordinator
}) {
	ctx := t.Context()
	const group, key = "team/jobs", "team/jobs/0"
	m, err := c.JoinGroup(ctx, group, "member#1", time.Minute, 2)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.ClaimPartitions(ctx, m, []string{"0"})
	if err != nil || res[0].Err != nil {
		t.Fatalf("ClaimPartitions(0) = %+v, %v; want a grant", res, err)
	}
	part := res[0].Grant

	_, err = c.Acquire(ctx, key, "elector#1", time.Minute)
	var held *tenure.HeldError
	if !errors.As(err, &held) || held.Holder != "member#1" {
		t.Fatalf("Acquire(%q) of a live partition = %v; want a *tenure.HeldError naming member#1", key, err)
	}
	for _, want := range []string{key, `group "team/jobs"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Acquire(%q) error %q does not name %s", key, err, want)
		}
	}
	if err := c.LeaveGroup(ctx, m); err != nil {
		t.Fatal(err)
	}
	g, err := c.Acquire(ctx, key, "elector#1", time.Minute)
	if err != nil {
		t.Fatalf("Acquire(%q) after the owner left = %v; want a grant", key, err)
	}
	if g.Token <= part.Token {
		t.Errorf("Acquire token %d after partition token %d; want greater", g.Token, part.Token)
	}

	m2, err := c.JoinGroup(ctx, group, "member#2", time.Minute, 2)
	if err != nil {
		t.Fatal(err)
	}
	res, err = c.ClaimPartitions(ctx, m2, []string{"0", "1"})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.As(res[0].Err, &held) || held.Holder != "elector#1" || held.Token != g.Token {
		t.Errorf("claim of %q held by an Elector = %+v; want a *tenure.HeldError naming elector#1, token %d", key, res[0], g.Token)
	}
	if res[1].Err != nil {
		t.Errorf("claim of free partition 1 = %v; want a grant", res[1].Err)
	}
	if err := c.Release(ctx, g); err != nil {
		t.Fatal(err)
	}
	res, err = c.ClaimPartitions(ctx, m2, []string{"0"})
	if err != nil || res[0].Err != nil {
		t.Fatalf("claim after the Elector released = %+v, %v; want a grant", res, err)
	}
	if res[0].Grant.Token <= g.Token {
		t.Errorf("partition token %d after Elector token %d; want greater", res[0].Grant.Token, g.Token)
	}
}
