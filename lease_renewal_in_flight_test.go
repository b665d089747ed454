package tenure_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure"
)

// The tests in this file hold a renewal in flight (sent 1s into a lease of
// 3s whose safe lease is 2.95s: limitsConfig) and act on the lease while
// it is: Keep cancelled, terms ended and started, the host suspended.

// flightLease returns a lease granted now for limitsConfig's TTL.
func flightLease(t *testing.T) (*tenure.Lease, tenure.Config) {
	t.Helper()
	cfg := limitsConfig()
	l, err := tenure.NewLease(cfg, cfg.TTL, tenure.Now())
	if err != nil {
		t.Fatalf("NewLease() = %v", err)
	}
	t.Cleanup(l.Stop)
	return l, cfg
}

// startTerms starts n terms on l, with tokens from first.
func startTerms(l *tenure.Lease, first, n int) []*tenure.Term {
	out := make([]*tenure.Term, n)
	for i := range out {
		tok := first + i
		out[i] = l.Start(context.Background(), tenure.Grant{Key: fmt.Sprintf("g/%d", tok), Holder: "h", Token: uint64(tok)})
	}
	return out
}

// slowRenewal answers every renewal after took, with the send time read
// when it was sent, whatever its context says (a coordinator that does not
// honour cancellation); sent receives each send time.
func slowRenewal(ttl, took time.Duration, sent chan<- tenure.Instant) func(context.Context, time.Time) (tenure.Grant, time.Time, error) {
	return func(context.Context, time.Time) (tenure.Grant, time.Time, error) {
		s := tenure.Now()
		if sent != nil {
			sent <- s
		}
		time.Sleep(took)
		return tenure.Grant{TTL: ttl, Sent: s}, time.Time{}, nil
	}
}

// Keep cancelled while a renewal is in flight returns without acting on
// its reply, however good: the term ends at the deadline it had, 2.95s in,
// not the 3.95s the late reply offered.
func TestLeaseKeepCancelledDuringRenewalExtendsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		begun := time.Now()
		l, cfg := flightLease(t)
		term := startTerms(l, 1, 1)[0]
		ctx, cancel := context.WithCancel(context.Background())
		kept := make(chan error, 1)
		go func() { kept <- l.Keep(ctx, slowRenewal(cfg.TTL, 500*time.Millisecond, nil)) }()
		time.Sleep(1200 * time.Millisecond)
		cancel()
		if err := <-kept; err != nil {
			t.Fatalf("Keep() = %v; want nil", err)
		}
		<-term.Context().Done()
		if took, want := time.Since(begun), 2950*time.Millisecond; took != want {
			t.Fatalf("term ended %s in; want %s, the deadline it had when Keep was cancelled", took, want)
		}
	})
}

// Terms that end while a renewal is in flight are not revived by its
// reply; terms started while it is are extended to the deadline it gives,
// sent + 2.95s, no later.
func TestLeaseTermsEndingAndStartingDuringRenewal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, cfg := flightLease(t)
		old := startTerms(l, 1, 10)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		sent := make(chan tenure.Instant, 10)
		kept := make(chan error, 1)
		go func() { kept <- l.Keep(ctx, slowRenewal(cfg.TTL, 500*time.Millisecond, sent)) }()
		s := <-sent // 1s in
		time.Sleep(200 * time.Millisecond)
		for _, term := range old[:5] {
			l.End(term, nil)
		}
		started := startTerms(l, 11, 5)
		time.Sleep(400 * time.Millisecond) // the reply came 1.5s in
		want := s.Time().Add(2950 * time.Millisecond)
		for i, term := range append(old, started...) {
			ended := i < 5
			if got := term.Check(); (got != nil) != ended {
				t.Fatalf("term %d: Check() after the reply = %v; want ended %v", term.Token(), got, ended)
			}
			if !ended && !term.Deadline().Equal(want) {
				t.Fatalf("term %d: deadline %s after the send; want 2.95s", term.Token(), term.Deadline().Sub(s.Time()))
			}
		}
		cancel()
		<-kept
		for _, term := range started {
			<-term.Context().Done()
		}
		if over := time.Since(want); over != 0 {
			t.Fatalf("terms started during the renewal ended %s after its deadline; want at it", over)
		}
	})
}

// A host suspended longer than the lease while its renewal is in flight:
// the reply, counted from a send before the suspend, is past on the boot
// clock. Every term riding the lease is over at once, a term started then
// is over too, and only a renewal sent after the resume lets terms start
// again (the lease outlives its terms).
func TestLeaseSuspendDuringRenewalEndsTerms(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		suspend, restore := tenure.SimulateSuspend()
		defer restore()
		l, cfg := flightLease(t)
		terms := startTerms(l, 1, 3)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		sent := make(chan tenure.Instant, 10)
		kept := make(chan error, 1)
		go func() { kept <- l.Keep(ctx, slowRenewal(cfg.TTL, 200*time.Millisecond, sent)) }()
		<-sent // 1s in
		time.Sleep(100 * time.Millisecond)
		suspend(5 * time.Second)
		time.Sleep(150 * time.Millisecond) // the reply came 1.2s in (Go's clock)
		for _, term := range terms {
			if err := term.Check(); err == nil {
				t.Fatalf("term %d: Check() after a suspend past the lease = nil; want ErrNotLeader", term.Token())
			}
		}
		if late := startTerms(l, 4, 1)[0]; late.Check() == nil {
			t.Fatal("Check() of a term started after a suspend past the lease = nil; want ErrNotLeader")
		}
		<-sent // the retry, sent after the resume
		time.Sleep(300 * time.Millisecond)
		if again := startTerms(l, 5, 1)[0]; again.Check() != nil {
			t.Fatalf("Check() of a term started after a renewal sent since the resume = %v; want nil", again.Check())
		}
		cancel()
		<-kept
	})
}
