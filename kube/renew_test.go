package kube_test

import (
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/kube"
)

// TestRenewSameSecond: a renewal whose renewTime falls in the same second
// as the one before changes nothing client-go compares, so it keeps the
// grant's earlier Sent; one in the next second moves Sent to its own send.
func TestRenewSameSecond(t *testing.T) {
	t.Parallel()
	_, cs := server(t)
	ns := newNamespace(t, cs)
	c := newCoordinator(t, cs, ns)
	g, r1 := acquireAndRenewInOneSecond(t, c)
	if !r1.Sent.Time().Equal(g.Sent.Time()) {
		t.Fatalf("a renewal in the same second as the acquire: Sent moved by %s; want the acquire's Sent (client-go saw no change)", r1.Sent.Time().Sub(g.Sent.Time()))
	}
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 20*time.Millisecond)))
	before := time.Now()
	r2, err := c.Renew(ctx(t), r1)
	if err != nil {
		t.Fatal(err)
	}
	if r2.Sent.Time().Before(before) {
		t.Fatalf("a renewal in a new second: Sent %s before the call; want its own send", before.Sub(r2.Sent.Time()))
	}
}

// acquireAndRenewInOneSecond acquires a key and renews it within one
// wall-clock second, starting just after a second begins (they take
// milliseconds; a loaded machine gets five tries).
func acquireAndRenewInOneSecond(t *testing.T, c *kube.Coordinator) (g, r tenure.Grant) {
	t.Helper()
	for range 5 {
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 20*time.Millisecond)))
		var err error
		if g, err = c.Acquire(ctx(t), "k", "alice#1", 10*time.Second); err != nil {
			t.Fatal(err)
		}
		if r, err = c.Renew(ctx(t), g); err != nil {
			t.Fatal(err)
		}
		if time.Now().Unix() == g.Sent.Time().Unix() {
			return g, r
		}
	}
	t.Fatal("an acquire and a renewal never fitted in one second in five tries")
	return
}
