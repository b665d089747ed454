// Term.StepDown while another goroutine ends the same term (Lease.End, the
// lease's timer, a loss): Term.end marks the term ended, unlocks, then
// cancels its context, which Check reads; a StepDown in between must not
// return before that cancel.

package tenure_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
)

// A term stepped down by its user while its lease's owner ends it fails
// Check once StepDown has returned.
func TestTermStepDownAtOnceFailsCheckOnReturn(t *testing.T) {
	cfg := tenure.DefaultConfig()
	cfg.Key, cfg.Holder = "g", "h"
	cfg.TTL = time.Minute
	l, err := tenure.NewLease(cfg, cfg.TTL, tenure.Now())
	if err != nil {
		t.Fatalf("NewLease() = %v", err)
	}
	defer l.Stop()
	for round := range 20000 {
		term := l.Start(context.Background(), tenure.Grant{Key: "g/0", Holder: "h", Token: uint64(round + 1)})
		var both sync.WaitGroup
		both.Go(func() { l.End(term, nil) })
		passed := false
		both.Go(func() {
			term.StepDown(nil)
			passed = term.Check() == nil
		})
		both.Wait()
		if passed {
			t.Fatalf("round %d: Check() = nil right after StepDown returned; want ErrNotLeader", round)
		}
	}
}
