package kube_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
)

// TestFreshContenderWaits: a contender that has never seen a Lease waits
// its whole duration (plus the drift allowance) from its first read, even
// when the Lease's renewTime says its holder died long ago; and a
// contender that restarts starts over.
func TestFreshContenderWaits(t *testing.T) {
	t.Parallel()
	_, cs := shared(t)
	ns := newNamespace(t, cs)
	const ttl = 2 * time.Second
	const wait = ttl + ttl/100 // the drift allowance of DefaultConfig
	dead := newCoordinator(t, cs, ns)
	g, err := dead.Acquire(ctx(t), "k", "dead#1", ttl)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * ttl) // never renewed: renewTime is 2 TTLs old

	b := newCoordinator(t, cs, ns)
	first := time.Now()
	if _, err := b.Acquire(ctx(t), "k", "bob#2", ttl); !errors.Is(err, tenure.ErrHeld) {
		t.Fatalf("a new contender's first Acquire of a Lease renewed %s ago: error = %v; want tenure.ErrHeld (it has not seen the Lease for %s yet)", 2*ttl, err, wait)
	}
	time.Sleep(wait / 2)
	restarted := newCoordinator(t, cs, ns) // bob's process restarted
	second := time.Now()
	if _, ok, err := restarted.Leader(ctx(t), "k"); err != nil || !ok {
		t.Fatalf("Leader from the restarted contender = %v, %v; want held", ok, err)
	}
	time.Sleep(time.Until(first.Add(wait + 200*time.Millisecond)))
	if _, ok, err := b.Leader(ctx(t), "k"); err != nil || ok {
		t.Fatalf("Leader from the contender %s after its first read = %v, %v; want free", time.Since(first), ok, err)
	}
	if _, ok, err := restarted.Leader(ctx(t), "k"); err != nil || !ok {
		t.Fatalf("Leader from the restarted contender %s after its first read = %v, %v; want held: its wait started over", time.Since(second), ok, err)
	}
	gb := pollAcquire(t, restarted, "k", "bob#2", ttl, second, wait)
	if gb.Token <= g.Token {
		t.Fatalf("token after the takeover = %d; want > %d", gb.Token, g.Token)
	}
	if _, err := dead.Renew(ctx(t), g); !errors.Is(err, tenure.ErrLost) {
		t.Fatalf("Renew of the taken grant: error = %v; want tenure.ErrLost", err)
	}
}

// pollAcquire acquires key for holder, polling, and fails the test if that
// succeeds before wait has passed since from, or long after.
func pollAcquire(t *testing.T, c tenure.Coordinator, key, holder string, ttl time.Duration, from time.Time, wait time.Duration) tenure.Grant {
	t.Helper()
	for {
		g, err := c.Acquire(ctx(t), key, holder, ttl)
		el := time.Since(from)
		if err == nil {
			if el < wait {
				t.Fatalf("Acquire succeeded %s after the contender first read the Lease; want no sooner than %s", el, wait)
			}
			return g
		}
		if !errors.Is(err, tenure.ErrHeld) {
			t.Fatalf("Acquire error = %v; want tenure.ErrHeld while waiting", err)
		}
		if el > wait+5*time.Second {
			t.Fatalf("Acquire still refused %s after the contender first read the Lease; want it granted after %s", el, wait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
