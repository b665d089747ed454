package kube_test

import (
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
)

// TestWatchAcrossServerRestart: a watch whose API server crashed and came
// back opens again by itself and reports the next grant.
func TestWatchAcrossServerRestart(t *testing.T) {
	t.Parallel()
	s, cs := server(t)
	ns := newNamespace(t, cs)
	c := newCoordinator(t, cs, ns)
	ch, err := c.Watch(t.Context(), "k")
	if err != nil {
		t.Fatal(err)
	}
	if ev := next(t, ch, 10*time.Second); ev.Held {
		t.Fatalf("first event = %+v; want the key free", ev)
	}
	s.Kill()
	s.Restart(t)
	g, err := newCoordinator(t, cs, ns).Acquire(ctx(t), "k", "alice#1", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Liveness with slack: the watch retries every 2s at most.
	for deadline := time.Now().Add(30 * time.Second); ; {
		ev := next(t, ch, time.Until(deadline))
		if ev.Held && ev.Grant.Token == g.Token {
			return
		}
	}
}

// next receives one event from ch within d.
func next(t *testing.T, ch <-chan tenure.LeaderEvent, d time.Duration) tenure.LeaderEvent {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("watch closed")
		}
		return ev
	case <-time.After(d):
		t.Fatalf("no event within %s", d)
	}
	panic("unreachable")
}
