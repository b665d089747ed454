package tenure_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
)

// When the coordinator reports a lease lost, Keep ends every term riding
// it and the lease stops: a term started on it while Keep is ending the
// others (a partition claimed by the member's loop as its renewer hears of
// the loss) is ended too, never left live until the old deadline while the
// coordinator has already given its keys away. Real goroutines, -race:
// terms are started throughout the loss; after Keep has returned, none
// passes Check and Start gives only ended terms.
func TestLeaseLostEndsTermsStartedDuringTheLoss(t *testing.T) {
	for round := range 20 {
		if leaked := lostRound(t); leaked != "" {
			t.Fatalf("round %d: %s", round, leaked)
		}
	}
}

// lostRound loses a lease riding 1000 terms while another goroutine keeps
// starting terms on it, and describes a term that still passes Check once
// Keep has returned ("" when none does).
func lostRound(t *testing.T) string {
	cfg := tenure.DefaultConfig()
	cfg.Key, cfg.Holder = "g", "h"
	cfg.TTL, cfg.RenewInterval = time.Minute, time.Millisecond
	l, err := tenure.NewLease(cfg, cfg.TTL, tenure.Now())
	if err != nil {
		t.Fatalf("NewLease() = %v", err)
	}
	defer l.Stop()
	start := func(i int) *tenure.Term {
		return l.Start(context.Background(), tenure.Grant{Key: fmt.Sprintf("g/%d", i), Holder: "h", Token: uint64(i + 1)})
	}
	terms := make([]*tenure.Term, 0, 2000)
	for i := range 1000 {
		terms = append(terms, start(i))
	}
	losing, kept := make(chan struct{}), make(chan struct{})
	var (
		mu     sync.Mutex
		raced  []*tenure.Term
		racing sync.WaitGroup
	)
	racing.Go(func() {
		<-losing
		for i := 1000; ; i++ {
			select {
			case <-kept:
				return
			default:
			}
			term := start(i)
			mu.Lock()
			raced = append(raced, term)
			mu.Unlock()
		}
	})
	keepErr := l.Keep(context.Background(), func(context.Context, time.Time) (tenure.Grant, time.Time, error) {
		close(losing)
		return tenure.Grant{}, time.Time{}, fmt.Errorf("renew: %w", tenure.ErrLost)
	})
	close(kept)
	racing.Wait()
	if !errors.Is(keepErr, tenure.ErrLost) {
		t.Fatalf("Keep() = %v; want ErrLost", keepErr)
	}
	terms = append(terms, raced...)
	terms = append(terms, start(-1))
	for _, term := range terms {
		if term.Check() == nil {
			return fmt.Sprintf("term %d (of %d, %d started during the loss) passes Check after Keep returned ErrLost", term.Token(), len(terms), len(raced))
		}
	}
	return ""
}
