package tenure_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/fence"
	"github.com/tenure-dev/tenure/internal/history"
)

// simHistory records an in-process simulation in the history format of
// tenure verify (package chaos), so that one set of checkers judges both:
// times are nanoseconds on the bubble's clock since origin.
type simHistory struct {
	origin time.Time
	mu     sync.Mutex
	h      history.History
}

func newSimHistory() *simHistory {
	return &simHistory{origin: time.Now(), h: history.History{}}
}

func (s *simHistory) since(t time.Time) int64 { return int64(t.Sub(s.origin)) }

// observe records one decision of a fenced register (a fence.WithObserver
// callback).
func (s *simHistory) observe(ev fence.Event) {
	v, _ := ev.Value.(string)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.h.Decisions = append(s.h.Decisions, history.Decision{Seq: ev.Seq, At: s.since(ev.At), Token: ev.Token, Value: v, Path: "fenced", Accepted: ev.Accepted})
}

// lead records that node's holder began term now, and its end when the
// term's own context ends (not the leader function's: during a
// resignation's drain the term stays live after fn's context is done).
func (s *simHistory) lead(node int, holder string, term *tenure.Term) {
	s.add(history.Event{Node: node, Holder: holder, Kind: history.KindElected, Token: term.Token()})
	context.AfterFunc(term.Context(), func() {
		s.add(history.Event{Node: node, Holder: holder, Kind: history.KindEnd, Token: term.Token()})
	})
}

func (s *simHistory) add(ev history.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ev.At = s.since(time.Now())
	s.h.Events = append(s.h.Events, ev)
}

// verdict is what chaos's checkers found in a simulation.
type verdict struct {
	spans        []history.Span
	overlap      history.Check
	overlapTotal time.Duration
	stale        history.Check
	order        history.Check
}

func (v verdict) violations() int { return v.overlap.Count + v.stale.Count + v.order.Count }

func (v verdict) String() string {
	var b strings.Builder
	for _, c := range []history.Check{v.overlap, v.stale, v.order} {
		for _, d := range c.Details {
			fmt.Fprintf(&b, "  %s: %s\n", strings.ToUpper(c.Name), d)
		}
	}
	return b.String()
}

// check runs the checkers once every term has ended. It fails t if a term
// has no recorded end: the overlap checker would not see it.
func (s *simHistory) check(t *testing.T) verdict {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.h.Finish = s.since(time.Now())
	ended := map[string]bool{}
	for _, ev := range s.h.Events {
		if ev.Kind == history.KindEnd {
			ended[fmt.Sprint(ev.Holder, ev.Token)] = true
		}
	}
	for _, ev := range s.h.Events {
		if ev.Kind == history.KindElected && !ended[fmt.Sprint(ev.Holder, ev.Token)] {
			t.Fatalf("term %d of %s has no recorded end: the overlap checker would not see it", ev.Token, ev.Holder)
		}
	}
	v := verdict{spans: history.Spans(&s.h)}
	v.overlap, v.overlapTotal = history.CheckOverlap(&s.h, v.spans)
	v.stale = history.CheckStaleWrites(&s.h)
	v.order = history.CheckTokenOrder(&s.h, v.spans)
	return v
}

// lateAccepted counts accepted writes that landed after their term had
// ended: the writes a paused process had in flight. They are harmless only
// because nothing newer had been written yet; the register rejects the rest.
func (s *simHistory) lateAccepted(spans []history.Span) int {
	end := map[uint64]int64{}
	for _, sp := range spans {
		end[sp.Token] = sp.End
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, d := range s.h.Decisions {
		if e, ok := end[d.Token]; ok && d.Accepted && d.At > e {
			n++
		}
	}
	return n
}
