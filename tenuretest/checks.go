package tenuretest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tenure-dev/tenure"
)

// allChecks lists the properties of the contract, in the order they run.
func allChecks() []check {
	return []check{
		{name: "MutualExclusion", run: checkMutualExclusion},
		{name: "Tokens", run: checkTokens},
		{name: "Superseded", run: checkSuperseded},
		{name: "Release", run: checkRelease},
		{name: "Expiry", run: checkExpiry},
		{name: "RenewExtends", run: checkRenewExtends},
		{name: "Leader", run: checkLeader},
		{name: "Watch", run: checkWatch},
		{name: "RenewOne", run: checkRenewOne},
		{name: "LeaseAge", run: checkLeaseAge},
		{name: "ConcurrentAcquire", run: checkConcurrentAcquire},
		{name: "BadInput", run: checkBadInput},
		{name: "CanceledContext", run: checkCanceledContext},
		{name: "Close", run: checkClose},
		{name: "Restart", needsRestart: true, run: checkRestart},
	}
}

// checkMutualExclusion: while one holder has a live lease, another holder's
// Acquire is refused with a *tenure.HeldError naming it, and the refusal
// changes nothing.
func checkMutualExclusion(s *state) {
	k := s.key("k")
	a, b := s.holder("alice"), s.holder("bob")
	ga := s.acquire(k, a)
	s.acquireHeld(k, b, ga)
	s.wantLeader(k, ga)
	s.renew(ga) // the refused acquire did not supersede ga

	// Keys are independent: b can lead another key while a leads k.
	k2 := s.key("other")
	gb := s.acquire(k2, b)
	s.acquireHeld(k2, a, gb)
	s.acquireHeld(k, b, ga)
	s.wantLeader(k, ga)
	s.wantLeader(k2, gb)
}

// checkTokens: every grant of a key has a token greater than every token
// granted before for that key, across release/acquire cycles and when the
// same holder acquires again.
func checkTokens(s *state) {
	k := s.key("k")
	a, b := s.holder("alice"), s.holder("bob")
	var last uint64
	next := func(g tenure.Grant, what string) {
		s.tb.Helper()
		if g.Token <= last {
			s.tb.Fatalf("%s: token = %d; want > %d (the previous token)", what, g.Token, last)
		}
		last = g.Token
	}
	for i := range 6 {
		h := a
		if i%2 == 1 {
			h = b
		}
		g := s.acquire(k, h)
		next(g, fmt.Sprintf("cycle %d: Acquire by %q", i, h))
		s.release(g)
	}
	g1 := s.acquire(k, a)
	next(g1, "Acquire by alice")
	g2 := s.acquire(k, a)
	next(g2, "Acquire again by alice while holding")
	s.wantLeader(k, g2)
}

// checkSuperseded: a grant superseded by a newer grant of the same key can
// neither be renewed nor released.
func checkSuperseded(s *state) {
	k := s.key("k")
	a, b := s.holder("alice"), s.holder("bob")
	g1 := s.acquire(k, a)
	g2 := s.acquire(k, a)
	if g2.Token <= g1.Token {
		s.tb.Fatalf("re-acquire token = %d; want > %d", g2.Token, g1.Token)
	}
	s.renewLost(g1)
	s.release(g1) // gone: no error, changes nothing
	s.wantLeader(k, g2)
	g2 = s.renew(g2)

	s.release(g2)
	g3 := s.acquire(k, b)
	if g3.Token <= g2.Token {
		s.tb.Fatalf("Acquire after release token = %d; want > %d", g3.Token, g2.Token)
	}
	s.renewLost(g2)
	s.renewLost(g1)
	s.release(g2)
	s.wantLeader(k, g3)
	s.renew(g3)
}

// checkRelease: Release frees the key at once; releasing a gone grant is not
// an error and changes nothing.
func checkRelease(s *state) {
	k := s.key("k")
	a, b := s.holder("alice"), s.holder("bob")
	ga := s.acquire(k, a)
	s.release(ga)
	s.wantFree(k)
	gb := s.acquire(k, b) // no waiting for expiry
	if gb.Token <= ga.Token {
		s.tb.Fatalf("Acquire after release token = %d; want > %d", gb.Token, ga.Token)
	}
	s.renewLost(ga)
	s.release(ga)
	s.wantLeader(k, gb)
	s.release(gb)
	s.release(gb) // twice: not an error
	s.wantFree(k)
}

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
	ttl := max(s.ttlOf(g1), s.ttlOf(g2))
	deadline := sent1.Add(ttl + s.o.grace)

	// k2: b polls Acquire until the lease expires.
	var gb tenure.Grant
	for {
		ctx, cancel := s.ctx()
		g, err := s.c.Acquire(ctx, k2, b, s.o.ttl)
		cancel()
		now := time.Now()
		if err == nil {
			if el := now.Sub(sent2); el < early(s.ttlOf(g2)) {
				s.tb.Fatalf("Acquire by another holder succeeded %s after the live grant %v was requested; its lease must last %s", el, g2, s.ttlOf(g2))
			}
			gb = g
			break
		}
		checkHeld(s.tb, err, g2)
		if now.After(deadline) {
			s.tb.Fatalf("key %q still held %s after its grant %v was requested; want it free after the TTL (+ %s grace)", k2, now.Sub(sent2), g2, s.o.grace)
		}
		s.sleep(s.pollInterval())
	}
	s.checkGrant(gb, k2, b)
	if gb.Token <= g2.Token {
		s.tb.Fatalf("Acquire after expiry token = %d; want > %d", gb.Token, g2.Token)
	}

	// k1: nobody acquired it; Leader reports it free once the lease expired.
	for {
		g, ok := s.leader(k1)
		now := time.Now()
		if !ok {
			if el := now.Sub(sent1); el < early(s.ttlOf(g1)) {
				s.tb.Fatalf("Leader(%q) reported the key free %s after %v was requested; its lease must last %s", k1, el, g1, s.ttlOf(g1))
			}
			break
		}
		if g.Holder != g1.Holder || g.Token != g1.Token {
			s.tb.Fatalf("Leader(%q) = %v; want %v or free", k1, g, g1)
		}
		if now.After(deadline) {
			s.tb.Fatalf("Leader(%q) still reports %v %s after it was requested; want it free after the TTL (+ %s grace)", k1, g, now.Sub(sent1), s.o.grace)
		}
		s.sleep(s.pollInterval())
	}

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

// checkLeader: Leader reports the live grant, and ok = false when the key is
// free.
func checkLeader(s *state) {
	k := s.key("k")
	a, b := s.holder("alice"), s.holder("bob")
	s.wantFree(k) // never held
	ga := s.acquire(k, a)
	s.wantLeader(k, ga)
	s.wantFree(s.key("other"))
	s.release(ga)
	s.wantFree(k)
	gb := s.acquire(k, b)
	s.wantLeader(k, gb)
	gb2 := s.acquire(k, b)
	s.wantLeader(k, gb2)
}

// checkWatch: Watch sends the current state first, then changes: acquire,
// release and expiry; the channel closes when the context ends.
func checkWatch(s *state) {
	w, ok := s.c.(tenure.Watcher)
	if !ok {
		s.tb.Skip("coordinator does not implement tenure.Watcher")
	}
	k := s.key("k")
	a := s.holder("alice")
	known := map[uint64]bool{}
	ctx1, cancel1 := context.WithCancel(s.tb.Context())
	defer cancel1()
	ch1, err := w.Watch(ctx1, k)
	if err != nil {
		s.tb.Fatalf("Watch(%q) error = %v; want nil", k, err)
	}
	if ev := s.event(ch1, k, known, "the first event", s.o.grace); ev.Held {
		s.tb.Fatalf("first event of a watch on a free key = %+v; want Held = false", ev)
	}

	ga := s.acquire(k, a)
	known[ga.Token] = true
	s.await(ch1, k, known, heldBy(ga), s.o.grace)

	ctx2, cancel2 := context.WithCancel(s.tb.Context())
	defer cancel2()
	ch2, err := w.Watch(ctx2, k)
	if err != nil {
		s.tb.Fatalf("Watch(%q) error = %v; want nil", k, err)
	}
	if ev := s.event(ch2, k, known, "the first event", s.o.grace); !heldBy(ga).match(ev) {
		s.tb.Fatalf("first event of a watch on a held key = %+v; want held by %v", ev, ga)
	}

	s.release(ga)
	s.await(ch1, k, known, free(), s.o.grace)
	s.await(ch2, k, known, free(), s.o.grace)

	sent := time.Now()
	ga2 := s.acquire(k, a)
	known[ga2.Token] = true
	s.await(ch1, k, known, heldBy(ga2), s.o.grace)
	// Not renewed: followers must hear of the expiry.
	ttl := s.ttlOf(ga2)
	s.await(ch1, k, known, free(), ttl+s.o.grace)
	if el := time.Since(sent); el < early(ttl) {
		s.tb.Fatalf("watch reported %v expired %s after it was requested; its lease must last %s", ga2, el, ttl)
	}

	cancel1()
	s.awaitClosed(ch1, k)
	cancel2()
	s.awaitClosed(ch2, k)
}

// A predicate on watch events.
type predicate struct {
	what  string
	match func(tenure.LeaderEvent) bool
}

func free() predicate {
	return predicate{"key free", func(ev tenure.LeaderEvent) bool { return !ev.Held }}
}

func heldBy(g tenure.Grant) predicate {
	return predicate{fmt.Sprintf("held by %v", g), func(ev tenure.LeaderEvent) bool {
		return ev.Held && ev.Grant.Holder == g.Holder && ev.Grant.Token == g.Token
	}}
}

// event receives one event from ch within timeout and checks that it is
// about key and names only grants the check made.
func (s *state) event(ch <-chan tenure.LeaderEvent, key string, known map[uint64]bool, what string, timeout time.Duration) tenure.LeaderEvent {
	s.tb.Helper()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case ev, ok := <-ch:
		if !ok {
			s.tb.Fatalf("watch of %q closed while waiting for %s", key, what)
		}
		if ev.Key != key {
			s.tb.Fatalf("watch of %q sent an event about key %q: %+v", key, ev.Key, ev)
		}
		if ev.Held && !known[ev.Grant.Token] {
			s.tb.Fatalf("watch of %q sent a grant nobody was given: %+v", key, ev)
		}
		return ev
	case <-t.C:
		s.tb.Fatalf("watch of %q sent no event within %s waiting for %s", key, timeout, what)
	}
	panic("unreachable")
}

// await receives events until one matches p, within timeout.
func (s *state) await(ch <-chan tenure.LeaderEvent, key string, known map[uint64]bool, p predicate, timeout time.Duration) {
	s.tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			s.tb.Fatalf("watch of %q sent no event %q within %s", key, p.what, timeout)
		}
		if ev := s.event(ch, key, known, p.what, left); p.match(ev) {
			return
		}
	}
}

// awaitClosed drains ch until it closes, within the grace period.
func (s *state) awaitClosed(ch <-chan tenure.LeaderEvent, key string) {
	s.tb.Helper()
	t := time.NewTimer(s.o.grace)
	defer t.Stop()
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-t.C:
			s.tb.Fatalf("watch of %q not closed within %s after its context was cancelled", key, s.o.grace)
		}
	}
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

// checkConcurrentAcquire: holders racing for a free key: exactly one wins
// each round, the others are told who; tokens increase over rounds.
func checkConcurrentAcquire(s *state) {
	const n, rounds = 8, 5
	k := s.key("k")
	holders := make([]string, n)
	for i := range holders {
		holders[i] = s.holder(fmt.Sprintf("racer%d", i))
	}
	var last uint64
	for round := range rounds {
		type result struct {
			g   tenure.Grant
			err error
		}
		results := make([]result, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				ctx, cancel := s.ctx()
				defer cancel()
				<-start
				g, err := s.c.Acquire(ctx, k, holders[i], s.o.ttl)
				results[i] = result{g, err}
			})
		}
		close(start)
		wg.Wait()

		var win tenure.Grant
		winners := 0
		for _, r := range results {
			if r.err == nil {
				winners++
				win = r.g
			}
		}
		if winners != 1 {
			s.tb.Fatalf("round %d: %d of %d racing acquirers won; want exactly 1", round, winners, n)
		}
		if win.Token <= last {
			s.tb.Fatalf("round %d: winning token = %d; want > %d", round, win.Token, last)
		}
		last = win.Token
		for i, r := range results {
			if r.err != nil {
				var he *tenure.HeldError
				if !errors.As(r.err, &he) {
					s.tb.Fatalf("round %d: loser %q error = %v; want *tenure.HeldError", round, holders[i], r.err)
				}
				if he.Holder != win.Holder || he.Token != win.Token {
					s.tb.Errorf("round %d: loser %q told holder %q token %d; want the winner %v", round, holders[i], he.Holder, he.Token, win)
				}
			}
		}
		s.wantLeader(k, win)
		s.release(win)
	}
}

// checkBadInput: malformed keys, holders, TTLs and grants are rejected with
// errors that match the right sentinel and name the input, and a refused
// request changes nothing.
func checkBadInput(s *state) {
	k := s.key("k")
	a, b := s.holder("alice"), s.holder("bob")
	ga := s.acquire(k, a)
	ttl := s.o.ttl

	cases := []struct {
		name   string
		key    string
		holder string
		ttl    time.Duration
		want   error
		text   string // what the error must mention
	}{
		{"empty key", "", b, ttl, tenure.ErrInvalidKey, "key"},
		{"leading slash", "/" + k, b, ttl, tenure.ErrInvalidKey, "/" + k},
		{"dot-dot element", k + "/../x", b, ttl, tenure.ErrInvalidKey, k + "/../x"},
		{"space", k + " x", b, ttl, tenure.ErrInvalidKey, k + " x"},
		{"quote", k + "'; drop", b, ttl, tenure.ErrInvalidKey, k + "'; drop"},
		{"too long key", strings.Repeat("x", tenure.MaxKeyLen+1), b, ttl, tenure.ErrInvalidKey, strings.Repeat("x", tenure.MaxKeyLen+1)},
		{"empty holder", k, "", ttl, tenure.ErrInvalidHolder, "holder"},
		{"control character in holder", k, "bad\x00holder", ttl, tenure.ErrInvalidHolder, "bad\x00holder"},
		{"too long holder", k, strings.Repeat("h", tenure.MaxHolderLen+1), ttl, tenure.ErrInvalidHolder, strings.Repeat("h", tenure.MaxHolderLen+1)},
		{"zero TTL", k, b, 0, tenure.ErrInvalidTTL, "0s"},
		{"negative TTL", k, b, -time.Second, tenure.ErrInvalidTTL, "-1s"},
		{"TTL over the maximum", k, b, tenure.MaxTTL + time.Hour, tenure.ErrInvalidTTL, (tenure.MaxTTL + time.Hour).String()},
		{"zero TTL by the holder", k, a, 0, tenure.ErrInvalidTTL, "0s"},
	}
	for _, tc := range cases {
		ctx, cancel := s.ctx()
		g, err := s.c.Acquire(ctx, tc.key, tc.holder, tc.ttl)
		cancel()
		switch {
		case err == nil:
			s.tb.Errorf("%s: Acquire(%q, %q, %s) = %v, nil; want an error wrapping %v", tc.name, tc.key, tc.holder, tc.ttl, g, tc.want)
		case !errors.Is(err, tc.want):
			s.tb.Errorf("%s: Acquire(%q, %q, %s) error = %v; want it to wrap %v", tc.name, tc.key, tc.holder, tc.ttl, err, tc.want)
		case !mentions(err, tc.text):
			s.tb.Errorf("%s: Acquire(%q, %q, %s) error = %q; want it to name the input %q", tc.name, tc.key, tc.holder, tc.ttl, err, tc.text)
		}
	}
	// Refused acquires left the holder untouched, and did not supersede it.
	s.wantLeader(k, ga)
	ga = s.renew(ga)

	badKey := "/" + k
	ctx, cancel := s.ctx()
	defer cancel()
	if _, _, err := s.c.Leader(ctx, badKey); !errors.Is(err, tenure.ErrInvalidKey) || !mentions(err, badKey) {
		s.tb.Errorf("Leader(%q) error = %v; want it to wrap tenure.ErrInvalidKey and name the key", badKey, err)
	}
	if w, ok := s.c.(tenure.Watcher); ok {
		ch, err := w.Watch(ctx, badKey)
		if !errors.Is(err, tenure.ErrInvalidKey) || !mentions(err, badKey) {
			s.tb.Errorf("Watch(%q) error = %v; want it to wrap tenure.ErrInvalidKey and name the key", badKey, err)
		}
		if err == nil && ch != nil {
			cancel()
			s.awaitClosed(ch, badKey)
		}
	}

	// Grants the coordinator never made cannot be renewed and do not
	// release the live grant. Malformed ones are rejected as such;
	// well-formed ones that are not the live grant are reported lost.
	forged := []struct {
		name string
		g    tenure.Grant
		want error
	}{
		{"zero token", tenure.Grant{Key: k, Holder: a, Token: 0, TTL: ttl}, tenure.ErrInvalidGrant},
		{"another holder's token", tenure.Grant{Key: k, Holder: b, Token: ga.Token, TTL: ttl}, tenure.ErrLost},
		{"a token never granted", tenure.Grant{Key: k, Holder: a, Token: ga.Token + 1_000_000, TTL: ttl}, tenure.ErrLost},
		{"a malformed key", tenure.Grant{Key: badKey, Holder: a, Token: ga.Token, TTL: ttl}, tenure.ErrInvalidGrant},
		{"an empty holder", tenure.Grant{Key: k, Holder: "", Token: ga.Token, TTL: ttl}, tenure.ErrInvalidGrant},
	}
	for _, f := range forged {
		ctx, cancel := s.ctx()
		r, err := s.c.Renew(ctx, f.g)
		switch {
		case err == nil:
			s.tb.Errorf("Renew of a grant with %s (%v) = %v, nil; want an error wrapping %v", f.name, f.g, r, f.want)
		case !errors.Is(err, f.want):
			s.tb.Errorf("Renew of a grant with %s (%v) error = %v; want it to wrap %v", f.name, f.g, err, f.want)
		}
		_ = s.c.Release(ctx, f.g) // an error or nil; either way nothing may change
		cancel()
		s.wantLeader(k, ga)
	}
	s.renew(ga)
}

// mentions reports whether err's message contains text, as is or quoted.
func mentions(err error, text string) bool {
	msg := err.Error()
	q := strconv.Quote(text)
	return strings.Contains(msg, text) || strings.Contains(msg, q[1:len(q)-1]) ||
		strings.Contains(msg, tenure.QuoteInput(text)) // long inputs are cut
}

// checkCanceledContext: a call whose context has ended returns an error
// wrapping the context's error.
func checkCanceledContext(s *state) {
	k := s.key("k")
	a := s.holder("alice")
	ga := s.acquire(k, a)

	ctx, cancel := context.WithCancel(s.tb.Context())
	cancel()
	if g, err := s.c.Acquire(ctx, s.key("k2"), a, s.o.ttl); !errors.Is(err, context.Canceled) {
		s.tb.Errorf("Acquire with a cancelled context = %v, %v; want an error wrapping context.Canceled", g, err)
	}
	if g, err := s.c.Renew(ctx, ga); !errors.Is(err, context.Canceled) {
		s.tb.Errorf("Renew with a cancelled context = %v, %v; want an error wrapping context.Canceled", g, err)
	}
	if err := s.c.Release(ctx, ga); !errors.Is(err, context.Canceled) {
		s.tb.Errorf("Release with a cancelled context = %v; want an error wrapping context.Canceled", err)
	}
	if g, ok, err := s.c.Leader(ctx, k); !errors.Is(err, context.Canceled) {
		s.tb.Errorf("Leader with a cancelled context = %v, %v, %v; want an error wrapping context.Canceled", g, ok, err)
	}
	// ga's renewal above never ran, or ran and left it live: still ours.
	s.wantLeader(k, ga)
	s.renew(ga)
}

// checkClose: a closed coordinator refuses calls with errors matching
// tenure.ErrClosed. (The factory's cleanup closes it again afterwards.)
func checkClose(s *state) {
	k := s.key("k")
	a := s.holder("alice")
	ga := s.acquire(k, a)
	if err := s.c.Close(); err != nil {
		s.tb.Fatalf("Close() = %v; want nil", err)
	}
	ctx, cancel := s.ctx()
	defer cancel()
	if g, err := s.c.Acquire(ctx, k, a, s.o.ttl); !errors.Is(err, tenure.ErrClosed) {
		s.tb.Errorf("Acquire after Close = %v, %v; want an error matching tenure.ErrClosed", g, err)
	}
	if g, ok, err := s.c.Leader(ctx, k); !errors.Is(err, tenure.ErrClosed) {
		s.tb.Errorf("Leader after Close = %v, %v, %v; want an error matching tenure.ErrClosed", g, ok, err)
	}
	if r, err := s.c.Renew(ctx, ga); !errors.Is(err, tenure.ErrClosed) {
		s.tb.Errorf("Renew after Close = %v, %v; want an error matching tenure.ErrClosed", r, err)
	}
	if err := s.c.Release(ctx, ga); !errors.Is(err, tenure.ErrClosed) {
		s.tb.Errorf("Release after Close = %v; want an error matching tenure.ErrClosed", err)
	}
	if w, ok := s.c.(tenure.Watcher); ok {
		ch, err := w.Watch(ctx, k)
		if !errors.Is(err, tenure.ErrClosed) {
			s.tb.Errorf("Watch after Close error = %v; want an error matching tenure.ErrClosed", err)
		}
		if err == nil && ch != nil {
			cancel()
			s.awaitClosed(ch, k)
		}
	}
	if err := s.c.Close(); err != nil {
		s.tb.Errorf("second Close() = %v; want nil (Close is idempotent)", err)
	}
}

// checkRestart: grants and tokens survive a restart of the coordinator's
// backend, and tokens keep increasing after it, whether the key was held or
// free when it restarted.
func checkRestart(s *state) {
	k := s.key("k")
	a, b := s.holder("alice"), s.holder("bob")
	sent := time.Now()
	ga := s.acquire(k, a)
	s.restart()

	var g tenure.Grant
	var ok bool
	s.retry("Leader after restart", func(ctx context.Context) (err error) {
		g, ok, err = s.c.Leader(ctx, k)
		return err
	})
	switch {
	case ok && (g.Holder != ga.Holder || g.Token != ga.Token):
		s.tb.Fatalf("Leader(%q) after restart = %v; want %v", k, g, ga)
	case !ok && time.Since(sent) < s.ttlOf(ga)*9/10:
		s.tb.Fatalf("Leader(%q) after restart: free; want %v, whose lease has not expired", k, ga)
	}
	s.retry("Release after restart", func(ctx context.Context) error { return s.c.Release(ctx, ga) })
	var gb tenure.Grant
	s.retry("Acquire after restart", func(ctx context.Context) (err error) {
		gb, err = s.c.Acquire(ctx, k, b, s.o.ttl)
		return err
	})
	s.checkGrant(gb, k, b)
	if gb.Token <= ga.Token {
		s.tb.Fatalf("Acquire after restart token = %d; want > %d (granted before the restart)", gb.Token, ga.Token)
	}
	s.renewLost(ga)

	// Restart with the key free: the token sequence survives too.
	s.release(gb)
	s.restart()
	var ga2 tenure.Grant
	s.retry("Acquire after second restart", func(ctx context.Context) (err error) {
		ga2, err = s.c.Acquire(ctx, k, a, s.o.ttl)
		return err
	})
	s.checkGrant(ga2, k, a)
	if ga2.Token <= gb.Token {
		s.tb.Fatalf("Acquire after a restart with the key free: token = %d; want > %d", ga2.Token, gb.Token)
	}
	s.renewLost(gb)
	s.wantLeader(k, ga2)
}

// retry calls f until it returns nil, for up to the grace period plus one
// call timeout.
func (s *state) retry(what string, f func(ctx context.Context) error) {
	s.tb.Helper()
	deadline := time.Now().Add(s.o.grace + s.o.callTimeout)
	for {
		ctx, cancel := s.ctx()
		err := f(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.tb.Fatalf("%s: still failing after %s: %v", what, s.o.grace+s.o.callTimeout, err)
		}
		s.sleep(s.pollInterval())
	}
}
