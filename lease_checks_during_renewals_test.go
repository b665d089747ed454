package tenure_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure"
)

// A scriptedRenewal is how one renewal of a scripted lease goes: it is
// answered took after it was sent, granting ttl, and reports a send time
// sentShift from the true one (negative: a coordinator that reads its
// clock before it needs to). noSent answers with no send time.
type scriptedRenewal struct {
	took, ttl, sentShift time.Duration
	noSent               bool
}

// An answered renewal is what a Check may rely on from the instant it was
// answered: a local deadline (zero for a renewal without a send time).
type answered struct {
	at, deadline time.Time
}

// checkRecord is one Check of many goroutines: when, and whether it passed.
type checkRecord struct {
	at time.Time
	ok bool
}

// scriptedLease keeps a lease with the renewals of script; every renewal
// after the script fails, so that the term ends at the deadline the script
// left it. safe is the safe lease of a TTL: TTL·(1 − MaxDrift) − Margin.
type scriptedLease struct {
	safe func(ttl time.Duration) time.Duration

	mu      sync.Mutex
	answers []answered
	checks  []checkRecord
}

func (s *scriptedLease) renew(script []scriptedRenewal) func(context.Context, time.Time) (tenure.Grant, time.Time, error) {
	n := 0
	return func(context.Context, time.Time) (tenure.Grant, time.Time, error) {
		if n == len(script) {
			time.Sleep(10 * time.Millisecond)
			return tenure.Grant{}, time.Time{}, errors.New("coordinator unreachable")
		}
		r := script[n]
		n++
		sent := tenure.Now().Add(r.sentShift)
		time.Sleep(r.took)
		a := answered{at: time.Now()}
		if r.noSent {
			sent = tenure.Instant{}
		} else {
			a.deadline = sent.Time().Add(s.safe(r.ttl))
		}
		s.mu.Lock()
		s.answers = append(s.answers, a)
		s.mu.Unlock()
		return tenure.Grant{TTL: r.ttl, Sent: sent}, time.Time{}, nil
	}
}

// checker calls Check every step until stop, and once more at each
// deadline the term is given (when step is zero), recording each call.
func (s *scriptedLease) checker(term *tenure.Term, step time.Duration, stop <-chan struct{}) {
	for {
		ok := term.Check() == nil
		s.mu.Lock()
		s.checks = append(s.checks, checkRecord{at: time.Now(), ok: ok})
		s.mu.Unlock()
		d := step
		if d == 0 {
			d = time.Until(term.Deadline())
			if d <= 0 {
				d = time.Millisecond
			}
		}
		select {
		case <-stop:
			return
		case <-time.After(d):
		}
	}
}

// since lists the renewals answered, as offsets from begun.
func (s *scriptedLease) since(begun time.Time) string {
	var b strings.Builder
	for _, a := range s.answers {
		dl := "none"
		if !a.deadline.IsZero() {
			dl = a.deadline.Sub(begun).String()
		}
		fmt.Fprintf(&b, "[answered %s, deadline %s] ", a.at.Sub(begun), dl)
	}
	return strings.TrimSpace(b.String())
}

// allowed reports whether a Check at instant at may pass: before the
// deadline the grant and the renewals answered before it leave, where a
// renewal answered at or after the deadline as it stood extends nothing
// (the term is over then, for good) and one without a send time ends it.
// (A Check at the very instant of an answer may see the deadline before
// it: it is as if it came first.)
func (s *scriptedLease) allowed(at, grantDeadline time.Time) bool {
	dl := grantDeadline
	for _, a := range s.answers {
		if !a.at.Before(at) {
			break // s.answers are in the order they were answered
		}
		if a.deadline.IsZero() {
			return false
		}
		if a.at.Before(dl) {
			dl = a.deadline
		}
	}
	return at.Before(dl)
}

// Many goroutines call Check on a term while its lease is renewed by a
// script of renewals answered late (after the deadline, or at its very
// instant), with a shorter TTL, with a send time from the past, or without
// one. The script's times are set for a safe lease of 2.95s (MaxDrift 0,
// Margin 50ms); it runs too at the edges of the settings: the greatest
// MaxDrift, and a Margin of a third of the TTL. A Check passes only before
// the deadline the renewals answered before it left (sent + TTL·(1 −
// MaxDrift) − Margin of the last one answered before the deadline as it
// stood), and once a Check has failed no later Check passes: a late
// renewal never revives the term.
func TestLeaseChecksPassOnlyBeforeTheLastDeadline(t *testing.T) {
	ttl := 3 * time.Second
	for _, c := range []struct {
		name   string
		script []scriptedRenewal
	}{
		// Sent 1s in, answered 3.5s in: past the deadline, 2.95s in.
		{"answered after the deadline", []scriptedRenewal{{took: 2500 * time.Millisecond, ttl: ttl}}},
		// Sent 1s in, answered 2.95s in: the very instant of the deadline.
		{"answered at the deadline", []scriptedRenewal{{took: 1950 * time.Millisecond, ttl: ttl}}},
		// Answered 1.9s after it was sent, then one answered at the
		// deadline that one gave.
		{"answered late twice", []scriptedRenewal{
			{took: 900 * time.Millisecond, ttl: ttl}, {took: 1050 * time.Millisecond, ttl: ttl},
		}},
		// A renewal that grants 1s: the deadline moves earlier, 0.95s
		// after that renewal's send.
		{"shorter TTL", []scriptedRenewal{{took: 10 * time.Millisecond, ttl: time.Second}}},
		// A renewal that says it was sent 2s before it was.
		{"send time from the past", []scriptedRenewal{{took: 10 * time.Millisecond, ttl: ttl, sentShift: -2 * time.Second}}},
		// A renewal without a send time ends the term at once.
		{"no send time", []scriptedRenewal{{took: 10 * time.Millisecond, ttl: ttl, noSent: true}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, e := range []struct {
				name     string
				maxDrift float64
				margin   time.Duration
			}{
				{"safe 2.95s", 0, 50 * time.Millisecond},
				{"MaxDrift 49%: safe 1.48s", 0.49, 50 * time.Millisecond},
				{"Margin 1s: safe 1.97s", 0.01, time.Second},
			} {
				t.Run(e.name, func(t *testing.T) {
					cfg := limitsConfig()
					cfg.MaxDrift, cfg.Margin = e.maxDrift, e.margin
					synctest.Test(t, func(t *testing.T) { checkScriptedLease(t, cfg, c.script) })
				})
			}
		})
	}
}

// checkScriptedLease runs one script of TestLeaseChecksPassOnlyBeforeTheLastDeadline.
func checkScriptedLease(t *testing.T, cfg tenure.Config, script []scriptedRenewal) {
	sent := tenure.Now()
	l, err := tenure.NewLease(cfg, cfg.TTL, sent)
	if err != nil {
		t.Fatalf("NewLease() = %v", err)
	}
	defer l.Stop()
	safe := func(ttl time.Duration) time.Duration {
		return time.Duration(float64(ttl)*(1-cfg.MaxDrift)) - cfg.Margin
	}
	grantDeadline := sent.Time().Add(safe(cfg.TTL))
	term := l.Start(context.Background(), tenure.Grant{Key: "g/0", Holder: "h", Token: 1, TTL: cfg.TTL, Sent: sent})
	s := &scriptedLease{safe: safe}
	ctx, cancel := context.WithCancel(context.Background())
	kept := make(chan error, 1)
	go func() { kept <- l.Keep(ctx, s.renew(script)) }()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, step := range []time.Duration{0, time.Millisecond, 3 * time.Millisecond, 7 * time.Millisecond, 50 * time.Millisecond} {
		wg.Go(func() { s.checker(term, step, stop) })
	}
	<-term.Context().Done()
	time.Sleep(3 * time.Second) // renewals go on, and fail
	close(stop)
	wg.Wait()
	cancel()
	if err := <-kept; err != nil {
		t.Fatalf("Keep() = %v; want nil", err)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	var failed time.Time
	passes := 0
	for _, c := range s.checks {
		if !c.ok {
			if failed.IsZero() || c.at.Before(failed) {
				failed = c.at
			}
			continue
		}
		passes++
		if !s.allowed(c.at, grantDeadline) {
			t.Errorf("Check() passed %s after the grant: past the deadline the grant (%s) and the renewals answered left it (%s)",
				c.at.Sub(sent.Time()), grantDeadline.Sub(sent.Time()), s.since(sent.Time()))
		}
	}
	for _, c := range s.checks {
		if c.ok && !failed.IsZero() && c.at.After(failed) {
			t.Errorf("Check() passed %s after the grant, after one failed at %s: the term was revived",
				c.at.Sub(sent.Time()), failed.Sub(sent.Time()))
		}
	}
	if passes == 0 || failed.IsZero() {
		t.Fatalf("%d Checks passed, first failure at %v: the script never exercised the term", passes, failed)
	}
}
