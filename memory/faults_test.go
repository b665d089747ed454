package memory_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/memory"
)

func TestPartition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCoord(t)
		ga := acquire(t, c, "k", "a", 10*time.Second)
		c.Partition("a")

		_, err := c.Renew(t.Context(), ga)
		if !errors.Is(err, memory.ErrPartitioned) || !strings.Contains(err.Error(), `"a"`) {
			t.Fatalf("Renew from a partitioned holder error = %v; want memory.ErrPartitioned naming %q", err, "a")
		}
		if errors.Is(err, tenure.ErrLost) {
			t.Errorf("Renew from a partitioned holder error = %v; the outcome is unknown, not lost", err)
		}
		if now() != 0 {
			t.Errorf("partitioned call took %s; want it to fail at once", now())
		}
		_, err = c.Acquire(t.Context(), "k2", "a", time.Second)
		if !errors.Is(err, memory.ErrPartitioned) {
			t.Fatalf("Acquire from a partitioned holder error = %v; want memory.ErrPartitioned", err)
		}
		wantLeader(t, c, "k2", "") // not applied
		if err := c.Release(t.Context(), ga); !errors.Is(err, memory.ErrPartitioned) {
			t.Fatalf("Release from a partitioned holder error = %v; want memory.ErrPartitioned", err)
		}

		// Other holders and observers are unaffected; the lease expires on its own.
		wantLeader(t, c, "k", "a")
		time.Sleep(10 * time.Second)
		gb := acquire(t, c, "k", "b", 10*time.Second)

		c.Heal("a")
		_, err = c.Acquire(t.Context(), "k", "a", time.Second)
		var he *tenure.HeldError
		if !errors.As(err, &he) || he.Token != gb.Token {
			t.Fatalf("Acquire after Heal error = %v; want *tenure.HeldError naming b", err)
		}
		if _, err := c.Renew(t.Context(), ga); !errors.Is(err, tenure.ErrLost) {
			t.Fatalf("Renew of the expired grant after Heal error = %v; want tenure.ErrLost", err)
		}
	})
}

func TestPartitionWhileInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCoord(t)
		c.SetLatency("a", 0, time.Second)
		errc := make(chan error, 1)
		go func() {
			_, err := c.Acquire(t.Context(), "k", "a", 10*time.Second)
			errc <- err
		}()
		time.Sleep(500 * time.Millisecond)
		c.Partition("a")
		if err := <-errc; !errors.Is(err, memory.ErrPartitioned) {
			t.Fatalf("Acquire whose reply crossed a new partition: error = %v; want memory.ErrPartitioned", err)
		}
		if now() != time.Second {
			t.Errorf("failed at %s; want at 1s, when the reply was due", now())
		}
		wantLeader(t, c, "k", "a") // it was applied: the outcome was unknown to a
	})
}

func TestBlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCoord(t)
		c.Block("a")
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		_, err := c.Acquire(ctx, "k", "a", 10*time.Second)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("blocked Acquire error = %v; want context.DeadlineExceeded", err)
		}
		if now() != 3*time.Second {
			t.Errorf("blocked Acquire returned at %s; want 3s, when its context ended", now())
		}
		wantLeader(t, c, "k", "") // the request never arrived
		acquire(t, c, "k2", "b", time.Second)

		c.Heal("a")
		if g := acquire(t, c, "k", "a", time.Second); g.Token != 1 {
			t.Errorf("token after Heal = %d; want 1 (the blocked request was never applied)", g.Token)
		}
	})
}

func TestLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCoord(t)
		c.SetLatency("a", time.Second, 2*time.Second)
		ch, err := c.Watch(t.Context(), "k")
		if err != nil {
			t.Fatal(err)
		}
		wantEvent(t, ch, "")
		done := make(chan struct{})
		var g tenure.Grant
		go func() {
			defer close(done)
			g, err = c.Acquire(t.Context(), "k", "a", 10*time.Second)
		}()
		time.Sleep(time.Second - time.Nanosecond)
		wantNoEvent(t, ch)
		time.Sleep(time.Nanosecond)
		wantEvent(t, ch, "a") // applied after the request delay

		time.Sleep(2*time.Second - time.Nanosecond)
		synctest.Wait()
		select {
		case <-done:
			t.Fatalf("Acquire returned at %s; want at 3s, after the reply delay", now())
		default:
		}
		time.Sleep(time.Nanosecond)
		<-done
		if err != nil || g.Holder != "a" {
			t.Fatalf("delayed Acquire = %v, %v; want a grant to a", g, err)
		}
		// The lease started when the request was applied, at 1s.
		time.Sleep(8*time.Second - time.Nanosecond)
		wantLeader(t, c, "k", "a")
		time.Sleep(time.Nanosecond)
		wantLeader(t, c, "k", "")
	})
}

func TestLatencyContextEnds(t *testing.T) {
	t.Run("during the request", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := newCoord(t)
			c.SetLatency("a", 2*time.Second, 0)
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			if _, err := c.Acquire(ctx, "k", "a", 10*time.Second); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Acquire error = %v; want context.DeadlineExceeded", err)
			}
			time.Sleep(5 * time.Second)
			wantLeader(t, c, "k", "") // never applied
		})
	})
	t.Run("during the reply", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := newCoord(t)
			c.SetLatency("a", 0, 2*time.Second)
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			if _, err := c.Acquire(ctx, "k", "a", 10*time.Second); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Acquire error = %v; want context.DeadlineExceeded", err)
			}
			wantLeader(t, c, "k", "a") // applied; the caller cannot know
		})
	})
}

func TestSetLatencyPanicsOnNegative(t *testing.T) {
	c := newCoord(t)
	defer func() {
		if recover() == nil {
			t.Errorf("SetLatency with a negative delay did not panic")
		}
	}()
	c.SetLatency("a", -time.Second, 0)
}

func TestDropReplies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCoord(t)
		c.DropReplies("a", true)
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		_, err := c.Acquire(ctx, "k", "a", 10*time.Second)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Acquire with a dropped reply error = %v; want context.DeadlineExceeded", err)
		}
		if now() != 5*time.Second {
			t.Errorf("returned at %s; want 5s, when its context ended", now())
		}
		wantLeader(t, c, "k", "a") // applied

		c.DropReplies("a", false)
		g := acquire(t, c, "k", "a", 10*time.Second)
		if g.Token != 2 {
			t.Errorf("token = %d; want 2 (the dropped reply's grant was 1)", g.Token)
		}
	})
}

func TestHealAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCoord(t)
		c.Partition("a")
		c.Block("b")
		c.SetLatency("c", time.Hour, time.Hour)
		c.DropReplies("d", true)
		c.HealAll()
		for _, h := range []string{"a", "b", "c", "d"} {
			acquire(t, c, "k/"+h, h, time.Second)
		}
		if now() != 0 {
			t.Errorf("healed calls took %s; want no delay", now())
		}
	})
}

func TestObserversAreNeverFaulted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCoord(t)
		acquire(t, c, "k", "a", time.Minute)
		c.Partition("a")
		c.Block("b")
		c.SetLatency("", time.Hour, time.Hour)
		wantLeader(t, c, "k", "a")
		ch, err := c.Watch(t.Context(), "k")
		if err != nil {
			t.Fatal(err)
		}
		wantEvent(t, ch, "a")
		if now() != 0 {
			t.Errorf("observers took %s; want no delay", now())
		}
	})
}

// TestRenewFaults: a renewal crosses its holder's link: it fails while the
// holder is cut off, and under latency the lease is extended when the call
// is applied, while the grant's Sent is when it was sent.
func TestRenewFaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCoord(t)
		g1 := acquire(t, c, "k1", "a", 10*time.Second)
		g3 := acquire(t, c, "k3", "b", 10*time.Second)
		time.Sleep(5 * time.Second)
		c.Partition("b")
		if _, err := c.Renew(t.Context(), g3); !errors.Is(err, memory.ErrPartitioned) {
			t.Fatalf("Renew by a partitioned holder error = %v; want memory.ErrPartitioned", err)
		}
		if _, err := c.Renew(t.Context(), tenure.Grant{Key: "k1", Holder: "a"}); !errors.Is(err, tenure.ErrInvalidGrant) {
			t.Fatalf("Renew(token 0) error = %v; want tenure.ErrInvalidGrant", err)
		}
		c.SetLatency("a", time.Second, time.Second)
		c.Heal("b")
		sent := time.Now()
		r, err := c.Renew(t.Context(), g1)
		if err != nil {
			t.Fatalf("Renew after Heal = %v; want renewed", err)
		}
		if now() != 7*time.Second {
			t.Errorf("Renew returned at %s; want 7s, after holder a's 2s latency", now())
		}
		if !r.Sent.Time().Equal(sent) {
			t.Errorf("renewed Sent = %s; want the send, %s", r.Sent.Time(), sent)
		}
		time.Sleep(9*time.Second - time.Nanosecond) // renewed when applied, at 6s
		wantLeader(t, c, "k1", "a")
		time.Sleep(time.Nanosecond)
		wantLeader(t, c, "k1", "")
	})
}
