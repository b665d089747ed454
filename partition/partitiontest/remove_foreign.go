package partitiontest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/partition"

	"github.com/tenure-dev/tenure"
)

// foreignRemover is what a coordinator that can hold records no grant
// wrote implements to free one (see tenure.ForeignRecord).
type foreignRemover interface {
	RemoveForeign(ctx context.Context, r tenure.ForeignRecord) (bool, error)
}

// removeForeignSparesLive checks that RemoveForeign frees nothing live,
// whatever record it is handed: records that name a live grant of a single
// key, a partition a live member owns, or a live membership (two of one ID
// among them), each with the live write's token, as foreign and as
// malformed (what a stale listing, or an operator racing another, can hand
// it), remove nothing. Afterwards another holder's Acquire is still
// refused, the grants renew and are not lost, and both memberships are
// still listed. Coordinators without RemoveForeign hold no such records.
func (s suite) removeForeignSparesLive(t *testing.T) {
	a, b := s.group(t), s.group(t)
	rm, ok := a.(foreignRemover)
	if !ok {
		return
	}
	const ttl = 30 * time.Second // outlasts the check on a loaded machine
	g := groupName(t)
	id := fmt.Sprintf("live%d#1", time.Now().UnixNano())
	first := joinFor(t, a, g, id, 2, ttl)
	owned := claimAll(t, a, first, "0")
	second := joinFor(t, b, g, id, 2, ttl)
	key, holder := g+"-single", fmt.Sprintf("single%d#1", time.Now().UnixNano())
	grant, err := a.Acquire(ctx(t), key, holder, ttl)
	if err != nil {
		t.Fatalf("Acquire(%q) error = %v", key, err)
	}
	for _, r := range liveRecords(g, id, []tenure.Grant{grant, owned[0]}, first, second) {
		if removed, err := rm.RemoveForeign(ctx(t), r); removed || err != nil {
			t.Errorf("RemoveForeign(%+v) = %t, %v; want false, nil: it names a live write", r, removed, err)
		}
	}
	var he *tenure.HeldError
	if g2, err := b.Acquire(ctx(t), key, "other#1", ttl); !errors.As(err, &he) {
		t.Errorf("Acquire(%q) by another holder after RemoveForeign = %+v, %v; want refused, %s holds it", key, g2, err, holder)
	}
	if _, err := a.Renew(ctx(t), grant); err != nil {
		t.Errorf("Renew(%s) after RemoveForeign error = %v; want the grant renewed", key, err)
	}
	first = renew(t, a, first)
	if lost, err := a.CheckPartitions(ctx(t), first, owned); err != nil || len(lost) != 0 {
		t.Errorf("CheckPartitions(%s) after RemoveForeign = %v, %v; want none lost", first, lost, err)
	}
	ms, err := a.GroupMembers(ctx(t), g)
	if err != nil {
		t.Fatalf("GroupMembers(%q) error = %v", g, err)
	}
	for _, m := range []partition.Member{first, second} {
		if !slices.ContainsFunc(ms, func(x partition.Member) bool { return x.ID == m.ID && x.Epoch == m.Epoch }) {
			t.Errorf("GroupMembers(%q) after RemoveForeign = %v; want membership %s listed", g, ms, m)
		}
	}
}

// liveRecords returns records that name the live grants gs and the live
// memberships ms of id in group g, each as foreign and as malformed. A
// membership record's token is not a Member field on every backend (etcd:
// the membership key's revision; Kubernetes: the Lease's resourceVersion),
// so the memberships are named with their epochs and with every token
// from a little before the first grant to the last, when that span is
// short (on PostgreSQL, tokens are clock microseconds and epochs are
// tokens).
func liveRecords(g, id string, gs []tenure.Grant, ms ...partition.Member) []tenure.ForeignRecord {
	var tokens []uint64
	for _, m := range ms {
		tokens = append(tokens, m.Epoch)
	}
	lo, hi := gs[0].Token, gs[0].Token
	for _, gr := range gs {
		lo, hi = min(lo, gr.Token), max(hi, gr.Token)
	}
	if hi-lo <= 64 {
		for tok := max(lo, 17) - 16; tok <= hi; tok++ {
			tokens = append(tokens, tok)
		}
	}
	var out []tenure.ForeignRecord
	for _, malformed := range []bool{false, true} {
		for _, gr := range gs {
			out = append(out, tenure.ForeignRecord{Key: gr.Key, Holder: gr.Holder, Token: gr.Token, TTL: gr.TTL, Malformed: malformed, Reason: "a live grant"})
		}
		for _, tok := range tokens {
			out = append(out, tenure.ForeignRecord{Key: g, Member: id, Holder: id, Token: tok, TTL: -1, Malformed: malformed, Reason: "a live membership"})
		}
	}
	return out
}
