package tenuretest

import (
	"time"

	"github.com/tenure-dev/tenure"
)

// checkExpiry: a lease that is not renewed expires after its TTL on the
// coordinator's clock (not before, and not much later); then another holder
// can acquire the key, and the expired grant can never be renewed again.
func checkExpiry(s *state) {
	k1, k2 := s.key("k1"), s.key("k2")
	a, b := s.holder("alice"), s.holder("bob")

	sent1 := time.Now()
	g1 := s.acquire(k1, a)
	sent2 := time.Now()
	g2 := s.acquire(k2, a)
	s.acquireHeld(k1, b, g1)
	deadline := sent1.Add(max(s.ttlOf(g1), s.ttlOf(g2)) + s.o.grace)
	gb := s.acquireOnExpiry(g2, b, sent2, deadline)
	s.awaitLeaderExpiry(g1, sent1, deadline)

	// An expired grant is never revived, even when nobody took the key.
	s.renewLost(g1)
	s.wantFree(k1)
	s.renewLost(g1)
	s.release(g1) // gone: not an error
	s.wantFree(k1)
	gb1 := s.acquire(k1, b)
	if gb1.Token <= g1.Token {
		s.tb.Fatalf("Acquire after expiry token = %d; want > %d", gb1.Token, g1.Token)
	}
	s.renewLost(g1)
	s.release(g1)
	s.wantLeader(k1, gb1)

	s.renewLost(g2)
	s.release(g2)
	s.wantLeader(k2, gb)
}

// acquireOnExpiry has holder poll Acquire of g's key, which nobody renews,
// until g's lease expires: not before g.Sent + TTL (less 1%), and no later
// than deadline (sent is when the check asked for g). It checks the new
// grant.
func (s *state) acquireOnExpiry(g tenure.Grant, holder string, sent, deadline time.Time) tenure.Grant {
	for {
		ctx, cancel := s.ctx()
		gb, err := s.c.Acquire(ctx, g.Key, holder, s.o.ttl)
		cancel()
		now := time.Now()
		if err == nil {
			if el := now.Sub(g.Sent.Time()); el < early(s.ttlOf(g)) {
				s.tb.Fatalf("Acquire by another holder succeeded %s after the live grant %v was requested (its Sent); its lease must last %s", el, g, s.ttlOf(g))
			}
			s.checkGrant(gb, g.Key, holder)
			if gb.Token <= g.Token {
				s.tb.Fatalf("Acquire after expiry token = %d; want > %d", gb.Token, g.Token)
			}
			return gb
		}
		checkHeld(s.tb, err, g)
		if now.After(deadline) {
			s.tb.Fatalf("key %q still held %s after its grant %v was requested; want it free after the TTL (+ %s grace)", g.Key, now.Sub(sent), g, s.o.grace)
		}
		s.sleep(s.pollInterval())
	}
}

// awaitLeaderExpiry polls Leader of g's key, which nobody renews or
// acquires, until it reports the key free: not before g.Sent + TTL (less
// 1%), and no later than deadline (sent is when the check asked for g).
func (s *state) awaitLeaderExpiry(g tenure.Grant, sent, deadline time.Time) {
	for {
		lg, ok := s.leader(g.Key)
		now := time.Now()
		if !ok {
			if el := now.Sub(g.Sent.Time()); el < early(s.ttlOf(g)) {
				s.tb.Fatalf("Leader(%q) reported the key free %s after %v was requested (its Sent); its lease must last %s", g.Key, el, g, s.ttlOf(g))
			}
			return
		}
		if lg.Holder != g.Holder || lg.Token != g.Token {
			s.tb.Fatalf("Leader(%q) = %v; want %v or free", g.Key, lg, g)
		}
		if now.After(deadline) {
			s.tb.Fatalf("Leader(%q) still reports %v %s after it was requested; want it free after the TTL (+ %s grace)", g.Key, lg, now.Sub(sent), s.o.grace)
		}
		s.sleep(s.pollInterval())
	}
}

// early is the shortest time after sending an acquire at which the lease
// may be observed expired: the TTL, less 1% for the rates of the suite's
// and the coordinator's clocks to differ.
func early(ttl time.Duration) time.Duration { return ttl - ttl/100 }

// checkRenewExtends: a grant renewed in time outlives its original TTL, and
// each renewal extends the lease by a full TTL from when it was sent (not
// less: a holder computes its local deadline from that; not much more: the
// lease must still expire once renewals stop).
func checkRenewExtends(s *state) {
	k := s.key("k")
	a, b := s.holder("alice"), s.holder("bob")
	sent := time.Now()
	ga := s.acquire(k, a)
	ttl := s.ttlOf(ga)
	for time.Since(sent) < 2*ttl {
		s.sleep(ttl / 4)
		ga = s.renew(ga)
	}
	// Twice the TTL after the acquire: only the renewals keep it alive.
	s.acquireHeld(k, b, ga)
	s.wantLeader(k, ga)

	// The last renewal alone bounds the lease: it must last a TTL from when
	// the renewal was sent, and end within the grace period after that.
	renewed := time.Now()
	ga = s.renew(ga)
	ttl = s.ttlOf(ga)
	deadline := renewed.Add(ttl + s.o.grace)
	var gb tenure.Grant
	for {
		ctx, cancel := s.ctx()
		g, err := s.c.Acquire(ctx, k, b, s.o.ttl)
		cancel()
		now := time.Now()
		if err == nil {
			if el := now.Sub(renewed); el < early(ttl) {
				s.tb.Fatalf("Acquire by another holder succeeded %s after %v was renewed; a renewed lease must last %s from the renewal", el, ga, ttl)
			}
			gb = g
			break
		}
		checkHeld(s.tb, err, ga)
		if now.After(deadline) {
			s.tb.Fatalf("key %q still held %s after the last renewal of %v; want it free after the TTL (+ %s grace)", k, now.Sub(renewed), ga, s.o.grace)
		}
		s.sleep(s.pollInterval())
	}
	s.checkGrant(gb, k, b)
	if gb.Token <= ga.Token {
		s.tb.Fatalf("Acquire after the renewed lease expired: token = %d; want > %d", gb.Token, ga.Token)
	}
	s.renewLost(ga)
	s.release(gb)
	s.wantFree(k)
}

// checkRenewOne: renewing one grant extends that grant only. A holder's
// other grant, never renewed, expires on time: nothing but its own Acquire
// and Renew may keep a key alive.
func checkRenewOne(s *state) {
	k1, k2 := s.key("k1"), s.key("k2")
	a, b := s.holder("alice"), s.holder("bob")
	g1 := s.acquire(k1, a)
	g2 := s.acquire(k2, a)
	deadline := g2.Sent.Time().Add(s.ttlOf(g2) + s.o.grace)
	for {
		ctx, cancel := s.ctx()
		gb, err := s.c.Acquire(ctx, k2, b, s.o.ttl)
		cancel()
		now := time.Now()
		if err == nil {
			s.checkGrant(gb, k2, b)
			break
		}
		checkHeld(s.tb, err, g2)
		if now.After(deadline) {
			s.tb.Fatalf("key %q, never renewed, still held %s after %v was granted: renewing %v (same holder, another key) kept it alive; want it free after its TTL (+ %s grace)", k2, now.Sub(g2.Sent.Time()), g2, g1, s.o.grace)
		}
		g1 = s.renew(g1)
		s.sleep(s.pollInterval())
	}
	s.wantLeader(k1, g1)
	s.release(g1)
}

// checkLeaseAge: a grant never reports more lease than it has. Its Sent is
// when the request that started or last extended its lease was sent, even
// when that was before the call that returned it (a lease granted ahead,
// while the holder was refused): another holder can never acquire the key
// before Sent + TTL (less 1% for clock rates).
func checkLeaseAge(s *state) {
	k := s.key("k")
	a, b, c := s.holder("alice"), s.holder("bob"), s.holder("carol")
	ga := s.acquire(k, a)
	s.acquireHeld(k, b, ga) // a coordinator may start bob's lease here
	s.sleep(s.o.ttl / 3)
	s.acquireHeld(k, b, ga)
	s.sleep(s.o.ttl / 4)
	s.release(ga)
	gb := s.acquire(k, b)
	if gb.Token <= ga.Token {
		s.tb.Fatalf("Acquire after release token = %d; want > %d", gb.Token, ga.Token)
	}
	s.wantExpiresNoEarlier(k, c, gb, "granted")

	// The same holds for a renewal: its lease counts from Sent.
	gc := s.acquire(k, c)
	s.sleep(s.o.ttl / 3)
	gc = s.renew(gc)
	s.wantExpiresNoEarlier(k, a, gc, "renewed")
}

// wantExpiresNoEarlier polls Acquire of key by holder until it succeeds, and
// fails the check if it does before g.Sent + TTL (less 1%), or much later.
func (s *state) wantExpiresNoEarlier(key, holder string, g tenure.Grant, how string) {
	s.tb.Helper()
	end := g.Sent.Time().Add(early(g.TTL))
	deadline := g.Sent.Time().Add(s.ttlOf(g) + s.o.grace)
	for {
		ctx, cancel := s.ctx()
		got, err := s.c.Acquire(ctx, key, holder, s.o.ttl)
		cancel()
		now := time.Now()
		if err == nil {
			if now.Before(end) {
				s.tb.Fatalf("Acquire by another holder succeeded %s after %v was %s (its Sent); a grant reporting TTL %s from Sent promises more lease than it has", now.Sub(g.Sent.Time()), g, how, g.TTL)
			}
			s.checkGrant(got, key, holder)
			s.release(got)
			return
		}
		checkHeld(s.tb, err, g)
		if now.After(deadline) {
			s.tb.Fatalf("key %q still held %s after %v was %s; want it free after the TTL (+ %s grace)", key, now.Sub(g.Sent.Time()), g, how, s.o.grace)
		}
		s.sleep(s.pollInterval())
	}
}
