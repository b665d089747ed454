package tenure_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
)

// Two goroutines end the same term at once (a partition's member ends a
// term its renewer is ending as lost): whichever End returns second, or
// first, the term fails Check from then on. Real goroutines, -race, many
// rounds: End returning while the other End has marked the term ended but
// not yet cancelled it would let Check pass after an End returned.
func TestLeaseEndAtOnceFailsCheckOnReturn(t *testing.T) {
	cfg := tenure.DefaultConfig()
	cfg.Key, cfg.Holder = "g", "h"
	cfg.TTL = time.Minute
	l, err := tenure.NewLease(cfg, cfg.TTL, tenure.Now())
	if err != nil {
		t.Fatalf("NewLease() = %v", err)
	}
	defer l.Stop()
	passed := make(chan int, 2)
	for round := range 20000 {
		term := l.Start(context.Background(), tenure.Grant{Key: "g/0", Holder: "h", Token: uint64(round + 1)})
		var both sync.WaitGroup
		for range 2 {
			both.Go(func() {
				l.End(term, nil)
				if term.Check() == nil {
					passed <- round
				}
			})
		}
		both.Wait()
		select {
		case r := <-passed:
			t.Fatalf("round %d: Check() = nil right after End returned; want ErrNotLeader", r)
		default:
		}
	}
}
