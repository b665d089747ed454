package tenuretest

import (
	"context"
	"time"

	"github.com/tenure-dev/tenure"
)

// checkRestart: grants and tokens survive a restart of the coordinator's
// backend, and tokens keep increasing after it, whether the key was held or
// free when it restarted.
func checkRestart(s *state) {
	k := s.key("k")
	a, b := s.holder("alice"), s.holder("bob")
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
	case !ok && time.Since(ga.Sent.Time()) < s.ttlOf(ga)*9/10:
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
