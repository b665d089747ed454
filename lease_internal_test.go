package tenure

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure/internal/boottime"
)

// A lease that many terms ride ends every term started on it when its deadline passes, moves
// every live term's deadline on Extend, never revives a term past its
// deadline, and ends a term started past it at once; terms end alone too.
func TestSharedDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newLeaseAt(leaseTiming{}, 0, Now().Add(5*time.Second), false, nil, "membership renewal")
		defer d.Stop()
		a := d.Start(context.Background(), Grant{Key: "g/0", Holder: "h", Token: 1})
		b := d.Start(context.Background(), Grant{Key: "g/1", Holder: "h", Token: 2})
		d.End(b, nil)
		if a.Check() != nil || b.Check() == nil {
			t.Fatalf("Check() = %v, %v; want a live, b ended alone", a.Check(), b.Check())
		}
		time.Sleep(4 * time.Second)
		d.extend(Grant{TTL: 10 * time.Second, Sent: Now()}, Now().Add(5*time.Second))
		time.Sleep(4 * time.Second) // 8s: past the first deadline, not the second
		if err := a.Check(); err != nil || a.Context().Err() != nil {
			t.Fatalf("a after Extend, 8s in: Check() = %v, context %v; want live", err, a.Context().Err())
		}
		if got := a.Grant().TTL; got != 10*time.Second {
			t.Errorf("a's TTL after Extend = %s; want 10s", got)
		}
		ended := time.Now()
		<-a.Context().Done()
		if at := time.Since(ended); at < time.Second-time.Millisecond || at > time.Second+time.Millisecond {
			t.Errorf("a ended %s after 8s; want at the deadline, 9s", at)
		}
		if !errors.Is(a.Check(), ErrNotLeader) {
			t.Errorf("a.Check() after the deadline = %v; want ErrNotLeader", a.Check())
		}
		late := d.Start(context.Background(), Grant{Key: "g/2", Holder: "h", Token: 3})
		if late.Context().Err() == nil {
			t.Error("a term started past the deadline is live; want it ended at once")
		}
		d.extend(Grant{TTL: 10 * time.Second, Sent: Now()}, Now().Add(5*time.Second))
		if a.Context().Err() == nil || a.Check() == nil {
			t.Error("Extend revived a term past its deadline")
		}
	})
}

// A host suspended past a lease's deadline (the boot clock moves, Go's
// does not) ends every term within suspendCheck of the resume, with no
// timer of their own.
func TestSharedDeadlineSuspend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk, suspend := boottime.NewSuspendable()
		defer boottime.Simulate(clk)()
		d := newLeaseAt(leaseTiming{}, 0, Now().Add(time.Minute), false, nil, "membership renewal")
		defer d.Stop()
		terms := make([]*Term, 3)
		for i := range terms {
			terms[i] = d.Start(context.Background(), Grant{Key: "g/x", Holder: "h", Token: uint64(i + 1)})
		}
		time.Sleep(2 * time.Second)
		suspend(time.Hour)
		resumed := time.Now()
		if terms[0].Check() == nil {
			t.Fatalf("Check() after a suspend past the deadline = nil; want ErrNotLeader")
		}
		for _, term := range terms[1:] { // no Check: the shared timer ends them
			<-term.Context().Done()
		}
		if took := time.Since(resumed); took > suspendCheck {
			t.Errorf("terms ended %s after the resume; want within %s", took, suspendCheck)
		}
	})
}
