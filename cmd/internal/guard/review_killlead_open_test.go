//go:build openfinding

// Open finding of the review of the kill's lead (issue 34), in the guard's
// state: run it with
//
//	go test -tags openfinding -count=1 -run TestReviewRenewAfterKillDue ./internal/guard/
//
// from cmd/. It fails: a renewal handled after its kill was due, before
// the guard ticked (the guard woke for the message first, or late), is
// taken, and continues the frozen tree, though 422d75e says that a renewal
// that comes within the kill's lead is too late. The tree then runs under
// the new lease, which tenure did get: no write past a deadline in force
// follows, but the guard's rule depends on the order in which it sees the
// message and its timer. The same holds for a renewal handled after the
// deadline itself (handle's OpLease checks only killed), as before 422d75e.

package guard

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// TestReviewRenewAfterKillDue: lease deadline 1 s (TTL 2 s: frozen at
// 900 ms, kill due at 950 ms), a renewal handled at 960 ms with no tick
// since the freeze.
func TestReviewRenewAfterKillDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, rec := newState(t, time.Second)
		s.handle(leaseMsg(time.Second, 0))
		time.Sleep(900 * time.Millisecond)
		s.tick()
		time.Sleep(60 * time.Millisecond) // no tick: the message came first
		s.handle(leaseMsg(3*time.Second, 0))
		s.tick()
		want := []string{"stopped (signal)@900ms", "killed@960ms"}
		if !slices.Equal(rec.sent, want) {
			t.Fatalf("sent %q; want %q (a renewal after the kill was due is too late)", rec.sent, want)
		}
	})
}
