package tenure_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure"
)

// A host suspended past a term's deadline, then a renewal sent after the
// resume and answered before the lease's timer or any Check has noticed:
// the term's deadline passed on the boot clock, so the renewal does not
// revive it (its Check fails, though the renewal is good), while a term
// started after the renewal rides the lease it renewed.
func TestLeaseRenewalAfterResumeRevivesNoTerm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		suspend, restore := tenure.SimulateSuspend()
		defer restore()
		cfg := limitsConfig()
		cfg.RenewInterval = 500 * time.Millisecond
		l, err := tenure.NewLease(cfg, cfg.TTL, tenure.Now())
		if err != nil {
			t.Fatalf("NewLease() = %v", err)
		}
		defer l.Stop()
		term := startTerms(l, 1, 1)[0]
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		sent := make(chan tenure.Instant, 10)
		kept := make(chan error, 1)
		go func() { kept <- l.Keep(ctx, slowRenewal(cfg.TTL, 0, sent)) }()
		<-sent // 0.5s in; the lease's timer wakes next 1s after it
		time.Sleep(200 * time.Millisecond)
		suspend(5 * time.Second) // past the deadline, 3.45s after that send, on the boot clock
		resumed := <-sent        // 1s in (Go's clock), after the resume
		time.Sleep(time.Millisecond)
		if l.Deadline().Until() <= 0 {
			t.Fatalf("the lease's deadline is %s away after a renewal sent after the resume; want it renewed", l.Deadline().Until())
		}
		if err := term.Check(); err == nil {
			t.Fatalf("Check() after a suspend past the deadline and a renewal sent %s later = nil; want ErrNotLeader: the renewal revived the term",
				time.Since(resumed.Time()))
		}
		if again := startTerms(l, 2, 1)[0]; again.Check() != nil {
			t.Fatalf("Check() of a term started after the renewal = %v; want nil", again.Check())
		}
		cancel()
		if err := <-kept; err != nil {
			t.Fatalf("Keep() = %v; want nil", err)
		}
	})
}
