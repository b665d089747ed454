package tenure_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure"
)

// Host suspends each shorter than the 50ms taken for scheduling noise add
// up: three of 40ms in a lease of 3s (safe lease 2.95s, Margin 50ms) put
// the lease 120ms older than Go's clock says, so its terms are over at
// 2.83s on Go's clock, when the boot clock says 2.95s, not at 2.95s on
// Go's clock (3.07s of the lease's life, past the coordinator's expiry).
func TestLeaseShortSuspendsAddUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		suspend, restore := tenure.SimulateSuspend()
		defer restore()
		begun := time.Now()
		l, _ := flightLease(t)
		term := startTerms(l, 1, 1)[0]
		for range 3 {
			time.Sleep(500 * time.Millisecond)
			suspend(40 * time.Millisecond)
		}
		time.Sleep(time.Until(begun.Add(2820 * time.Millisecond)))
		if err := term.Check(); err != nil {
			t.Fatalf("Check() 2.82s in on Go's clock (2.94s on the boot clock) = %v; want nil", err)
		}
		time.Sleep(20 * time.Millisecond)
		if term.Check() == nil {
			t.Fatal("Check() 2.84s in on Go's clock (2.96s on the boot clock, past the 2.95s safe lease) = nil; want ErrNotLeader")
		}
		if late := startTerms(l, 2, 1)[0]; late.Check() == nil {
			t.Fatal("Check() of a term started past the deadline on the boot clock = nil; want ErrNotLeader")
		}
	})
}
