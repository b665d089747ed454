package partitiontest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/partition"
)

// OneOwnerPerKey checks that a partition's key (group/name) has one owner,
// whichever API asks: a single-key Acquire of a live partition is refused
// with a *tenure.HeldError naming the member, and its error names the key
// and each of also; a claim of a partition whose key a single-key grant
// holds is refused, naming that grant; once the owner is gone, the other
// API takes the key with a greater token. The group's name has a '/' of its
// own.
func OneOwnerPerKey(t *testing.T, c partition.Coordinator, also ...string) {
	t.Helper()
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
	for _, want := range append([]string{key}, also...) {
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
