package tenuretest

import (
	"errors"
	"time"

	"github.com/tenure-dev/tenure"
)

// The edit checks hold a coordinator to docs/safety.md's bound on an edit by
// hand of a live grant's record ("When an administrator removes a record"):
// the edit never makes tenure report more lease than the grant asked for,
// and when it lets another holder in, that holder's token is greater and the
// old holder's next renewal is told lost.

// edits returns the backend's Edits; a check that needs them fails without.
func (s *state) edits() *Edits {
	s.tb.Helper()
	e := s.o.edits
	if e == nil || e.Lengthen == nil || e.Shorten == nil || e.Remove == nil {
		s.tb.Fatalf("the edit checks need WithEdits with Lengthen, Shorten and Remove")
	}
	return e
}

// checkEditLengthen: after g's record is lengthened to an hour, Renew either
// tells g lost or reports a TTL no longer than g's, at each of two renewals
// (a holder computes its deadline from Sent + TTL, and Sent is never after
// the reply: see checkSent). Then another holder's Acquire is refused naming
// g, or, if granted, is granted with a greater token and not before the
// lease of the last renewal that succeeded ends.
func checkEditLengthen(s *state) {
	const d = time.Hour
	k := s.key("k")
	a, b := s.holder("alice"), s.holder("bob")
	ga := s.acquire(k, a)
	s.edits().Lengthen(s.tb, ga, d)

	last := ga
	for i := range 2 {
		ctx, cancel := s.ctx()
		r, err := s.c.Renew(ctx, last)
		cancel()
		if err != nil {
			if !errors.Is(err, tenure.ErrLost) {
				s.tb.Fatalf("Renew(%v) after its record was lengthened to %s: error = %v; want success or an error wrapping tenure.ErrLost", last, d, err)
			}
			// The edit ended the grant (on etcd, revoking the lease
			// deletes its key). A holder let in must have a greater
			// token, and not before a renewal that succeeded ends; the
			// grant stays lost.
			s.tb.Logf("after %v's record was lengthened to %s, its renewal %d was told lost: %v", ga, d, i+1, err)
			var renewed tenure.Grant
			if i > 0 {
				renewed = last
			}
			s.probeAfterEdit(k, b, ga, renewed, "lengthened")
			s.renewLost(ga)
			return
		}
		if r.Key != ga.Key || r.Holder != ga.Holder || r.Token != ga.Token {
			s.tb.Fatalf("Renew(%v) after its record was lengthened = %v; want the same key, holder and token", last, r)
		}
		s.checkSent(r)
		if r.TTL <= 0 || r.TTL > ga.TTL {
			s.tb.Fatalf("renewal %d of %v after its record was lengthened to %s reports TTL %s; want at most %s, the grant's: an edit by hand must not lengthen what the holder is told", i+1, ga, d, r.TTL, ga.TTL)
		}
		last = r
	}
	s.probeAfterEdit(k, b, ga, last, "lengthened")
}

// probeAfterEdit has holder try once to acquire key, whose grant g's record
// was edited (how). A refusal must name g. A grant must have a token greater
// than g's; if renewed is not zero (g renewed after the edit), it must not
// come before renewed.Sent + renewed.TTL (less 1%).
func (s *state) probeAfterEdit(key, holder string, g, renewed tenure.Grant, how string) {
	s.tb.Helper()
	ctx, cancel := s.ctx()
	got, err := s.c.Acquire(ctx, key, holder, s.o.ttl)
	cancel()
	now := time.Now()
	if err != nil {
		checkHeld(s.tb, err, g)
		return
	}
	if !renewed.Sent.IsZero() {
		if end := renewed.Sent.Time().Add(early(renewed.TTL)); now.Before(end) {
			s.tb.Fatalf("Acquire(%q, %q) = %v, %s after %v was renewed (its record %s by hand): two holders of the key at once", key, holder, got, now.Sub(renewed.Sent.Time()), renewed, how)
		}
	}
	s.checkGrant(got, key, holder)
	if got.Token <= g.Token {
		s.tb.Fatalf("Acquire(%q, %q) after %v's record was %s by hand: token = %d; want > %d, the old grant's", key, holder, g, how, got.Token, g.Token)
	}
}

// checkEditShorten: after g's record is shortened to a quarter of the TTL,
// another holder is granted the key at the latest once g's own lease ends,
// with a greater token; g's next Renew is lost, and neither it nor g's
// Release disturbs the new holder.
func checkEditShorten(s *state) {
	k := s.key("k")
	ga := s.acquire(k, s.holder("alice"))
	s.edits().Shorten(s.tb, ga, s.o.ttl/4)
	s.letInAfterEdit(ga, s.holder("bob"), "shortened")
}

// checkEditRemove: as checkEditShorten, for g's record deleted.
func checkEditRemove(s *state) {
	k := s.key("k")
	ga := s.acquire(k, s.holder("alice"))
	s.edits().Remove(s.tb, ga)
	s.letInAfterEdit(ga, s.holder("bob"), "removed")
}

// letInAfterEdit polls Acquire of g's key by holder, with g never renewed
// after its record was edited (how), until it is granted, at the latest the
// grace period after g's own lease ends. The new grant's token must be
// greater than g's; then g's Renew must be told lost, and after it and g's
// Release the new grant must still be the key's leader and renew.
func (s *state) letInAfterEdit(g tenure.Grant, holder, how string) {
	s.tb.Helper()
	edited := time.Now()
	deadline := g.Sent.Time().Add(s.ttlOf(g) + s.o.grace)
	var gb tenure.Grant
	for {
		ctx, cancel := s.ctx()
		got, err := s.c.Acquire(ctx, g.Key, holder, s.o.ttl)
		cancel()
		now := time.Now()
		if err == nil {
			s.tb.Logf("after %v's record was %s, %q was granted the key %s later", g, how, holder, now.Sub(edited).Round(time.Millisecond))
			gb = got
			break
		}
		checkHeld(s.tb, err, g)
		if now.After(deadline) {
			s.tb.Fatalf("key %q still held by %v %s after its record was %s by hand, never renewed; want it free by the end of its lease (+ %s grace)", g.Key, g, now.Sub(edited), how, s.o.grace)
		}
		s.sleep(s.pollInterval())
	}
	s.checkGrant(gb, g.Key, holder)
	if gb.Token <= g.Token {
		s.tb.Fatalf("Acquire(%q, %q) after %v's record was %s by hand: token = %d; want > %d, the old grant's (the old holder acts until its next renewal)", g.Key, holder, g, how, gb.Token, g.Token)
	}
	ctx, cancel := s.ctx()
	r, err := s.c.Renew(ctx, g)
	cancel()
	if err == nil {
		s.tb.Fatalf("Renew(%v) after its record was %s by hand and %v was granted the key = %v, nil; want an error wrapping tenure.ErrLost: two holders act at once", g, how, gb, r)
	}
	if !errors.Is(err, tenure.ErrLost) {
		s.tb.Fatalf("Renew(%v) after its record was %s by hand and %v was granted the key: error = %v; want it to wrap tenure.ErrLost", g, how, gb, err)
	}
	s.release(g) // gone: not an error, changes nothing
	s.wantLeader(g.Key, gb)
	s.renew(gb)
}
