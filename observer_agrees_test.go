package tenure_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/memory"
)

// observerOracle checks an Observer's reports against the terms of
// Electors: when the Observer reports token k held, every term with a
// smaller token must be over (its lease ended before k was granted); when
// it reports the key free, every term with a token it has reported before
// must be over. Either way a live term that fails this is one the
// coordinator no longer backs: the Observer, or the term, is wrong.
type observerOracle struct {
	electors map[string]*tenure.Elector

	mu      sync.Mutex
	maxSeen uint64
	events  int
	bad     []string
}

func (o *observerOracle) onChange(ev tenure.LeaderEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events++
	for name, e := range o.electors {
		t := e.Term() // nil unless its term is live
		if t == nil {
			continue
		}
		switch {
		case ev.Held && t.Token() < ev.Grant.Token:
			o.bad = append(o.bad, fmt.Sprintf("Observer reports token %d of %s while %s's term with token %d is live", ev.Grant.Token, ev.Grant.Holder, name, t.Token()))
		case !ev.Held && t.Token() <= o.maxSeen:
			o.bad = append(o.bad, fmt.Sprintf("Observer reports the key free while %s's term with token %d (reported before) is live", name, t.Token()))
		}
	}
	if ev.Held {
		o.maxSeen = max(o.maxSeen, ev.Grant.Token)
	}
}

// TestObserverAgreesWithTerms: three Electors take turns on a key
// (each resigns after 4s, longer than the TTL, so that a term cut off runs
// to its deadline) through a scripted run of faults — lost replies, a
// partition, latency, the coordinator's clock at the fast edge of the drift
// bound while every link is blocked, a coordinator restart, a blocked link
// — while an Observer follows the key. No report of the Observer may
// contradict a live term, and no act of a term may be unbacked by the
// coordinator.
func TestObserverAgreesWithTerms(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := memory.New()
		defer c.Close()
		o := newOracle(c, "scheduler")
		oo := &observerOracle{electors: map[string]*tenure.Elector{}}
		var stops []func()
		for _, h := range []string{"a", "b", "c"} {
			e := newElector(t, c, testConfig(h))
			oo.electors[h] = e
			stops = append(stops, runLoop(t, e, o.lead(h, 4*time.Second, nil), 500*time.Millisecond))
		}
		obs, err := tenure.NewObserver(c, "scheduler")
		if err != nil {
			t.Fatal(err)
		}
		octx, stopObs := context.WithCancel(context.Background())
		obsDone := make(chan error, 1)
		go func() { obsDone <- obs.Run(octx, oo.onChange) }()
		t.Cleanup(func() { stopObs(); <-obsDone })

		step := func(at time.Duration, f func()) {
			time.Sleep(at)
			f()
		}
		step(2*time.Second, func() { c.DropReplies("a", true) })
		step(4*time.Second, func() { c.DropReplies("a", false); c.Partition("b") })
		step(4*time.Second, func() { c.Heal("b"); c.SetLatency("c", 500*time.Millisecond, 500*time.Millisecond) })
		step(4*time.Second, func() { c.Heal("c"); c.SetClockRate(1 / (1 - 0.01)) })
		step(time.Second, func() { // whoever leads cannot renew, at the fast edge
			for _, h := range []string{"a", "b", "c"} {
				c.Block(h)
			}
		})
		step(4*time.Second, func() { c.HealAll(); c.SetClockRate(1); c.Restart() })
		step(2*time.Second, func() { c.Block("a"); c.DropReplies("b", true) })
		step(3*time.Second, func() { c.HealAll() })
		time.Sleep(5 * time.Second)
		for _, stop := range stops {
			stop()
		}
		stopObs()
		o.check(t)
		oo.mu.Lock()
		defer oo.mu.Unlock()
		for _, b := range oo.bad {
			t.Error(b)
		}
		if oo.events < 10 {
			t.Fatalf("the Observer reported %d changes; want at least 10 in 30s (terms:\n%s)", oo.events, o.describe())
		}
		led, terms := 0, 0
		for _, h := range []string{"a", "b", "c"} {
			if n := len(o.termsOf(h)); n > 0 {
				led++
				terms += n
			}
		}
		if led < 2 || terms < 5 {
			t.Fatalf("%d terms of %d Electors in 30s; want 5 or more, of 2 Electors or more; terms:\n%s", terms, led, o.describe())
		}
	})
}
