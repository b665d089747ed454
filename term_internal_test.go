package tenure

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure/internal/boottime"
)

func TestTermDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := Grant{Key: "k", Holder: "h", Token: 7, TTL: 10 * time.Second}
		start := time.Now()
		term := newTerm(context.Background(), g, dlAt(start.Add(8*time.Second)))
		if err := term.Check(); err != nil {
			t.Fatalf("Check() at start = %v; want nil", err)
		}
		if got := term.Remaining(); got != 8*time.Second {
			t.Fatalf("Remaining() = %s; want 8s", got)
		}
		time.Sleep(5 * time.Second)
		if !term.lease.extend(Grant{TTL: 10 * time.Second}, dlAt(time.Now().Add(8*time.Second))) {
			t.Fatal("extend() before the deadline = false; want true")
		}
		time.Sleep(7 * time.Second) // 12s after start: past the old deadline, before the new one
		if err := term.Check(); err != nil {
			t.Fatalf("Check() after extension = %v; want nil", err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		select {
		case <-term.Context().Done():
		default:
			t.Fatal("term context not cancelled at the extended deadline")
		}
		if err := term.Check(); !errors.Is(err, ErrNotLeader) {
			t.Fatalf("Check() after deadline = %v; want ErrNotLeader", err)
		}
		if got := time.Since(start); got != 13*time.Second {
			t.Fatalf("term ended %s after start; want 13s", got)
		}
		if term.lease.extend(Grant{TTL: 10 * time.Second}, dlAt(time.Now().Add(8*time.Second))) {
			t.Fatal("extend() of an ended term = true; an ended term must never be revived")
		}
		if err := term.Check(); err == nil {
			t.Fatal("Check() after a refused extend = nil; want ErrNotLeader")
		}
	})
}

func TestTermCheckBeatsTimer(t *testing.T) {
	// Check reads the clock itself: even if the timer has not fired, a term
	// past its deadline is over.
	synctest.Test(t, func(t *testing.T) {
		term := newTerm(context.Background(), Grant{Key: "k", Holder: "h", Token: 1, TTL: time.Second}, dlAt(time.Now().Add(time.Second)))
		term.lease.Stop() // simulate a timer that has not run yet
		time.Sleep(time.Second)
		if err := term.Check(); !errors.Is(err, ErrNotLeader) {
			t.Fatalf("Check() at the deadline = %v; want ErrNotLeader", err)
		}
		if term.Context().Err() == nil {
			t.Fatal("Check() found the deadline passed but left the context live")
		}
	})
}

func TestTermStepDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		term := newTerm(context.Background(), Grant{Key: "k", Holder: "h", Token: 3, TTL: time.Minute}, dlAt(time.Now().Add(time.Minute)))
		stale := &HeldError{Key: "k"} // any error; wrapping is what matters
		term.StepDown(stale)
		err := term.Check()
		if !errors.Is(err, ErrNotLeader) || !errors.Is(err, errSteppedDown) || !errors.As(err, &stale) {
			t.Fatalf("Check() after StepDown = %v; want ErrNotLeader wrapping the cause", err)
		}
		if got := context.Cause(term.Context()); got != err {
			t.Fatalf("context.Cause = %v; want %v", got, err)
		}
		if term.Remaining() != 0 {
			t.Fatalf("Remaining() after StepDown = %s; want 0", term.Remaining())
		}
		term.StepDown(nil) // idempotent
	})
}

func TestTermRenewalWithShorterTTLShortensDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		term := newTerm(context.Background(), Grant{Key: "k", Holder: "h", Token: 1, TTL: 10 * time.Second}, dlAt(time.Now().Add(9*time.Second)))
		time.Sleep(time.Second)
		// The coordinator renewed with a 3s TTL: its lease now ends sooner
		// than the first grant's did.
		if !term.lease.extend(Grant{TTL: 3 * time.Second}, dlAt(time.Now().Add(2*time.Second))) {
			t.Fatal("extend() = false; want true")
		}
		if got := term.Remaining(); got != 2*time.Second {
			t.Fatalf("Remaining() after a shorter renewal = %s; want 2s (the old, longer deadline no longer holds)", got)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if term.Context().Err() == nil {
			t.Fatal("term still live past the shortened deadline")
		}
	})
}

// dlAt is a local deadline at mono on Go's clock, and a year away on the
// boot clock, which in a bubble runs in real time: these tests are about Go's
// clock alone (TestTermEndsAfterSuspend is about the boot clock).
func dlAt(mono time.Time) Instant {
	return Instant{mono: mono, boot: boottime.Now().Add(365 * 24 * time.Hour)}
}

// TestTermEndsAfterSuspend: a host suspended for longer than the lease
// stops CLOCK_MONOTONIC but not CLOCK_BOOTTIME. On resume the term is over:
// Check fails at once, and the context is cancelled within suspendCheck.
func TestTermEndsAfterSuspend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk, suspend := boottime.NewSuspendable()
		defer boottime.Simulate(clk)()
		sent := Now()
		term := newTerm(context.Background(), Grant{Key: "k", Holder: "h", Token: 4, TTL: 10 * time.Second}, sent.Add(8*time.Second))
		time.Sleep(2 * time.Second)
		if err := term.Check(); err != nil {
			t.Fatalf("Check() 2s into the term = %v; want nil", err)
		}
		suspend(30 * time.Second) // the host sleeps; Go's clock does not move
		if err := term.Check(); !errors.Is(err, ErrNotLeader) {
			t.Fatalf("Check() after a 30s suspend = %v; want ErrNotLeader", err)
		}
		if r := term.Remaining(); r > 0 {
			t.Fatalf("Remaining() after a 30s suspend = %s; want <= 0", r)
		}
		if term.lease.extend(Grant{TTL: 10 * time.Second}, Now().Add(8*time.Second)) {
			t.Fatal("extend() after the boot-clock deadline = true; an ended term must never be revived")
		}
	})
	synctest.Test(t, func(t *testing.T) {
		// The context too: no Check call, only the timer.
		clk, suspend := boottime.NewSuspendable()
		defer boottime.Simulate(clk)()
		sent := Now()
		term := newTerm(context.Background(), Grant{Key: "k", Holder: "h", Token: 5, TTL: time.Minute}, sent.Add(50*time.Second))
		time.Sleep(2 * time.Second)
		suspend(time.Hour)
		resumed := time.Now()
		<-term.Context().Done()
		if took := time.Since(resumed); took > suspendCheck {
			t.Fatalf("term context cancelled %s after resume; want within %s", took, suspendCheck)
		}
	})
}
