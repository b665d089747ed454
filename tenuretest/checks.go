package tenuretest

import (
	"errors"
	"fmt"
	"sync"

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
		{name: "EditLengthen", needsEdits: true, run: checkEditLengthen},
		{name: "EditShorten", needsEdits: true, run: checkEditShorten},
		{name: "EditRemove", needsEdits: true, run: checkEditRemove},
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
