package tenuretest

import (
	"context"
	"fmt"
	"time"

	"github.com/tenure-dev/tenure"
)

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
	w, ok := s.c, true
	if !ok {
		s.tb.Skip("coordinator does not implement tenure.Coordinator")
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

	ga2 := s.acquire(k, a)
	known[ga2.Token] = true
	s.await(ch1, k, known, heldBy(ga2), s.o.grace)
	// Not renewed: followers must hear of the expiry, and not before the
	// lease ends. It counts from the grant's Sent, which may be before this
	// Acquire was called (a lease kept from ga's Release): see
	// checkLeaseAge.
	ttl := s.ttlOf(ga2)
	s.await(ch1, k, known, free(), ttl+s.o.grace)
	if el := time.Since(ga2.Sent.Time()); el < early(ttl) {
		s.tb.Fatalf("watch reported %v expired %s after its Sent; its lease must last %s", ga2, el, ttl)
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
