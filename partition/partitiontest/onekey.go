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

// claimOverOwnSingleGrant is OneOwnerPerKey in the other order, under one
// identity: a single-key grant of a partition's key (an Elector of a
// process that also runs the group under the same Holder and Instance,
// which Run accepts) is taken first; then a member of that identity
// claims the partition. A claim supersedes a grant the member owns as a
// member, never a single key's grant, whoever holds it: the claim must be
// refused with a *tenure.HeldError naming the grant, and the grant must
// still renew (else the Elector and the member both lead the key until the
// Elector's next renewal, the member with the greater token). Once the
// grant is released, the claim succeeds with a greater token.
func (s suite) claimOverOwnSingleGrant(t *testing.T) {
	c := s.group(t)
	group := groupName(t)
	key := group + "/0"
	const id = "node#1"
	g, err := c.Acquire(ctx(t), key, id, time.Minute)
	if err != nil {
		t.Fatalf("Acquire(%q, %q) = %v", key, id, err)
	}
	m, err := c.JoinGroup(ctx(t), group, id, time.Minute, 1)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.ClaimPartitions(ctx(t), m, []string{"0"})
	if err != nil {
		t.Fatalf("ClaimPartitions(0) = %v", err)
	}
	var held *tenure.HeldError
	if !errors.As(res[0].Err, &held) || held.Token != g.Token {
		t.Errorf("member %q's claim of %q, held as a single key by %q with token %d = %+v; want a *tenure.HeldError naming that grant",
			id, key, id, g.Token, res[0])
	}
	if _, err := c.Renew(ctx(t), g); err != nil {
		t.Errorf("Renew of the single-key grant (token %d) after the member's claim = %v; want it live", g.Token, err)
	}
	if err := c.Release(ctx(t), g); err != nil {
		t.Fatal(err)
	}
	res, err = c.ClaimPartitions(ctx(t), m, []string{"0"})
	if err != nil || res[0].Err != nil {
		t.Fatalf("claim after the single-key grant was released = %+v, %v; want a grant", res, err)
	}
	if res[0].Grant.Token <= g.Token {
		t.Errorf("partition token %d after single-key token %d; want greater", res[0].Grant.Token, g.Token)
	}
}
