package partitiontest

import (
	"errors"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
)

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
