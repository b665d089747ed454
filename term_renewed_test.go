package tenure

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// TestTermRenewed: the channel Renewed returns is closed by the next
// renewal that moves the deadline, and only then; a new one waits for the
// renewal after; a refused extension (the term has ended) closes none.
func TestTermRenewed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		term := newTerm(context.Background(), Grant{Key: "k", Holder: "h", Token: 3, TTL: 10 * time.Second}, dlAt(time.Now().Add(8*time.Second)))
		first := term.Renewed()
		if again := term.Renewed(); again != first {
			t.Fatal("Renewed() twice without a renewal returned two channels; want the same")
		}
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if closed(first) {
			t.Fatal("Renewed() closed without a renewal")
		}
		moved := time.Now().Add(8 * time.Second)
		if !term.lease.extend(Grant{TTL: 10 * time.Second}, dlAt(moved)) {
			t.Fatal("extend() = false; want true")
		}
		if !closed(first) {
			t.Fatal("Renewed() not closed by a renewal")
		}
		if !term.Deadline().Equal(moved) {
			t.Fatalf("Deadline() after the renewal = %v; want %v", term.Deadline(), moved)
		}
		second := term.Renewed()
		if closed(second) {
			t.Fatal("Renewed() after a renewal is closed already; want it open until the next")
		}
		time.Sleep(9 * time.Second) // past the deadline: the term ends
		synctest.Wait()
		if term.lease.extend(Grant{TTL: 10 * time.Second}, dlAt(time.Now().Add(8*time.Second))) {
			t.Fatal("extend() of an ended term = true")
		}
		if closed(second) {
			t.Fatal("Renewed() closed by an extension refused after the term ended")
		}
	})
}

// closed reports whether ch is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
