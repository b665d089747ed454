package tenure_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/timerwait"
)

// leaseOracle judges a leader at every act against the coordinator, at the
// instant of the act: a term may act only while the coordinator holds the
// key under that term's token, for at any other instant the coordinator
// could grant the key to another holder. It also records each term (start,
// end, deadline) so that tests can check that no two overlap, that tokens
// strictly increase, and where a term ended. Leaders act every actEvery
// (virtual time, in a synctest bubble), and once more right before their
// local deadline.
type leaseOracle struct {
	c   tenure.Coordinator
	key string

	mu    sync.Mutex
	acts  int
	bad   []string
	terms []*oracleTerm
}

// actEvery is how often an oracle's leader acts.
const actEvery = time.Millisecond

// oracleTerm is one term as a leader of the oracle saw it.
type oracleTerm struct {
	holder     string
	token      uint64
	start, end time.Time // end: its last act (it acted from start to end)
	deadline   time.Time // the term's local deadline when it ended
	acts       int
	ended      bool
}

func newOracle(c tenure.Coordinator, key string) *leaseOracle {
	return &leaseOracle{c: c, key: key}
}

// lead returns a leader function for an Elector of holder (a display name):
// it acts every actEvery until its term ends or, when hold > 0, for hold,
// and then returns nil (the Elector resigns). during, if not nil, runs in
// a goroutine of its own at the start of each term, for a test to inject
// faults at chosen moments of it.
func (o *leaseOracle) lead(holder string, hold time.Duration, during func(term *tenure.Term)) func(context.Context, *tenure.Term) error {
	return func(ctx context.Context, term *tenure.Term) error {
		ot := &oracleTerm{holder: holder, token: term.Token(), start: time.Now()}
		o.mu.Lock()
		o.terms = append(o.terms, ot)
		o.mu.Unlock()
		var wg sync.WaitGroup
		defer wg.Wait()
		if during != nil {
			wg.Go(func() { during(term) })
		}
		var until time.Time
		if hold > 0 {
			until = time.Now().Add(hold)
		}
		for {
			if ctx.Err() != nil || term.Check() != nil {
				break
			}
			o.act(ot, term)
			if !until.IsZero() && !time.Now().Before(until) {
				break
			}
			// Act again after actEvery, or right before the deadline.
			next := actEvery
			if d := time.Until(term.Deadline()); d > time.Nanosecond && d-time.Nanosecond < next {
				next = d - time.Nanosecond
			}
			sleepOrDone(ctx, next)
		}
		o.mu.Lock()
		ot.deadline, ot.ended = term.Deadline(), true
		if ot.end.IsZero() {
			ot.end = ot.start
		}
		o.mu.Unlock()
		return nil
	}
}

// sleepOrDone sleeps for d or until ctx ends.
func sleepOrDone(ctx context.Context, d time.Duration) {
	timer := time.NewTimer(timerwait.Delay(d))
	defer timer.Stop()
	select {
	case <-ctx.Done():
	case <-timer.C:
	}
}

// act is one action of term ot: the coordinator must hold the key under
// the term's token now.
func (o *leaseOracle) act(ot *oracleTerm, term *tenure.Term) {
	g, ok, err := o.c.Leader(context.Background(), o.key)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.acts++
	ot.acts++
	ot.end = time.Now()
	switch {
	case err != nil:
		o.bad = append(o.bad, fmt.Sprintf("%s acted with token %d; Leader() failed: %v", ot.holder, ot.token, err))
	case !ok:
		o.bad = append(o.bad, fmt.Sprintf("%s acted with token %d at %s into its term (deadline in %s) while the key was free at the coordinator",
			ot.holder, ot.token, time.Since(ot.start), time.Until(term.Deadline())))
	case g.Token != ot.token:
		o.bad = append(o.bad, fmt.Sprintf("%s acted with token %d at %s into its term (deadline in %s) while the coordinator had granted token %d to %s",
			ot.holder, ot.token, time.Since(ot.start), time.Until(term.Deadline()), g.Token, g.Holder))
	}
}

// violations lists every act the coordinator did not back, every pair of
// terms that overlap and every token that does not increase. Terms overlap
// when one starts strictly before the other's last act: at one instant of
// a bubble's clock, a resignation's last act, its release and a
// successor's grant follow one another.
func (o *leaseOracle) violations() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := append([]string(nil), o.bad...)
	for i, a := range o.terms {
		if !a.ended {
			out = append(out, fmt.Sprintf("term %d of %s never ended", a.token, a.holder))
			continue
		}
		if i > 0 && a.token <= o.terms[i-1].token {
			out = append(out, fmt.Sprintf("token %d of %s after token %d of %s: not increasing", a.token, a.holder, o.terms[i-1].token, o.terms[i-1].holder))
		}
		for _, b := range o.terms[i+1:] {
			if b.ended && b.start.Before(a.end) && a.start.Before(b.end) && b.acts > 0 && a.acts > 0 {
				out = append(out, fmt.Sprintf("terms %d of %s and %d of %s both acted from %s to %s",
					a.token, a.holder, b.token, b.holder, b.start.Sub(o.terms[0].start), earlier(a.end, b.end).Sub(o.terms[0].start)))
			}
		}
	}
	return out
}

// check fails t if the oracle saw a violation, and reports the terms.
func (o *leaseOracle) check(t *testing.T) {
	t.Helper()
	if v := o.violations(); len(v) > 0 {
		if len(v) > 10 {
			v = append(v[:10], fmt.Sprintf("… and %d more", len(v)-10))
		}
		t.Fatalf("%d violations; terms:\n%s\nviolations:\n  %s", len(o.violations()), o.describe(), strings.Join(v, "\n  "))
	}
}

// describe lists the terms, relative to the first one's start.
func (o *leaseOracle) describe() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var b strings.Builder
	if len(o.terms) == 0 {
		return "  (none)\n"
	}
	origin := o.terms[0].start
	for _, ot := range o.terms {
		fmt.Fprintf(&b, "  %s token %d: [%s, %s) deadline %s, %d acts\n", ot.holder, ot.token, ot.start.Sub(origin), ot.end.Sub(origin), ot.deadline.Sub(origin), ot.acts)
	}
	return b.String()
}

// termsOf returns the terms of holder so far.
func (o *leaseOracle) termsOf(holder string) []oracleTerm {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []oracleTerm
	for _, ot := range o.terms {
		if ot.holder == holder {
			out = append(out, *ot)
		}
	}
	return out
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// runLoop runs e.Run again, rest after each time it returns (a leader
// function that returns nil resigns and ends Run), until the returned stop
// is called, or t ends (so that a test that fails early leaves no
// goroutine behind in its bubble).
func runLoop(t *testing.T, e *tenure.Elector, fn func(context.Context, *tenure.Term) error, rest time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			e.Run(ctx, fn)
			sleepOrDone(ctx, rest)
		}
	}()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

// await receives from ch, failing t if nothing comes within d.
func await[T any](t *testing.T, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("%s: nothing within %s", what, d)
		panic("unreachable")
	}
}
