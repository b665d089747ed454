package memory_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/memory"
)

func TestRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCoord(t)
		ga := acquire(t, c, "k", "a", 10*time.Second)
		ch, err := c.Watch(t.Context(), "k")
		if err != nil {
			t.Fatal(err)
		}
		wantEvent(t, ch, "a")

		// Calls in flight: a request on its way, a blocked one, a reply on its way.
		c.SetLatency("b", time.Second, 0)
		c.Block("c")
		c.SetLatency("d", 0, time.Second)
		errs := make(chan error, 3)
		for _, h := range []string{"b", "c", "d"} {
			go func() {
				_, err := c.Acquire(t.Context(), "k/"+h, h, 10*time.Second)
				errs <- err
			}()
		}
		time.Sleep(500 * time.Millisecond)
		c.Restart()
		for range 3 {
			if err := <-errs; !errors.Is(err, memory.ErrRestarted) {
				t.Errorf("in-flight Acquire error = %v; want memory.ErrRestarted", err)
			}
		}
		if now() != 500*time.Millisecond {
			t.Errorf("in-flight calls failed at %s; want at once (500ms)", now())
		}
		wantLeader(t, c, "k/b", "")  // request lost
		wantLeader(t, c, "k/c", "")  // request lost
		wantLeader(t, c, "k/d", "d") // applied, reply lost

		// Watches break.
		if _, open, ok := pending(ch); !ok || open {
			t.Errorf("watch after Restart: open = %v; want closed", open)
		}

		// Leases, their expiry and tokens are durable.
		wantLeader(t, c, "k", "a")
		time.Sleep(9500*time.Millisecond - time.Nanosecond)
		wantLeader(t, c, "k", "a")
		time.Sleep(time.Nanosecond)
		wantLeader(t, c, "k", "")
		if g := acquire(t, c, "k", "b", time.Second); g.Token != ga.Token+1 {
			t.Errorf("token after Restart = %d; want %d", g.Token, ga.Token+1)
		}
	})
}

func TestClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := memory.New()
		g := acquire(t, c, "k", "a", 10*time.Second)
		ch, err := c.Watch(t.Context(), "k")
		if err != nil {
			t.Fatal(err)
		}
		c.Block("b")
		errc := make(chan error, 1)
		go func() {
			_, err := c.Acquire(t.Context(), "k2", "b", time.Second)
			errc <- err
		}()
		synctest.Wait()

		if err := c.Close(); err != nil {
			t.Fatalf("Close() = %v", err)
		}
		if err := <-errc; !errors.Is(err, tenure.ErrClosed) {
			t.Errorf("in-flight Acquire error = %v; want tenure.ErrClosed", err)
		}
		<-ch // the current state
		if _, open := <-ch; open {
			t.Errorf("watch open after Close; want closed")
		}
		if err := c.Close(); err != nil {
			t.Errorf("second Close() = %v; want nil", err)
		}
		ctx := t.Context()
		if _, err := c.Acquire(ctx, "k", "a", time.Second); !errors.Is(err, tenure.ErrClosed) {
			t.Errorf("Acquire after Close error = %v; want tenure.ErrClosed", err)
		}
		if _, err := c.Renew(ctx, g); !errors.Is(err, tenure.ErrClosed) {
			t.Errorf("Renew after Close error = %v; want tenure.ErrClosed", err)
		}
		if err := c.Release(ctx, g); !errors.Is(err, tenure.ErrClosed) {
			t.Errorf("Release after Close error = %v; want tenure.ErrClosed", err)
		}
		if _, _, err := c.Leader(ctx, "k"); !errors.Is(err, tenure.ErrClosed) {
			t.Errorf("Leader after Close error = %v; want tenure.ErrClosed", err)
		}
		if _, err := c.Watch(ctx, "k"); !errors.Is(err, tenure.ErrClosed) {
			t.Errorf("Watch after Close error = %v; want tenure.ErrClosed", err)
		}
		c.Restart() // no effect, no panic
	})
}

func TestWatch(t *testing.T) {
	t.Run("current state first", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := newCoord(t)
			g := acquire(t, c, "k", "a", time.Minute)
			ch, err := c.Watch(t.Context(), "k")
			if err != nil {
				t.Fatal(err)
			}
			g.Sent = tenure.Instant{} // a watch reports what it reads, not when a lease was sent
			if ev := wantEvent(t, ch, "a"); ev.Key != "k" || ev.Grant != g {
				t.Errorf("first event = %+v; want held with %v", ev, g)
			}
		})
	})
	t.Run("coalesced", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := newCoord(t)
			ch, err := c.Watch(t.Context(), "k")
			if err != nil {
				t.Fatal(err)
			}
			g := acquire(t, c, "k", "a", time.Minute)
			if err := c.Release(t.Context(), g); err != nil {
				t.Fatal(err)
			}
			acquire(t, c, "k", "b", time.Minute)
			wantEvent(t, ch, "b") // only the latest
			wantNoEvent(t, ch)
		})
	})
	t.Run("renewal is not a change", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := newCoord(t)
			g := acquire(t, c, "k", "a", time.Minute)
			ch, err := c.Watch(t.Context(), "k")
			if err != nil {
				t.Fatal(err)
			}
			wantEvent(t, ch, "a")
			if _, err := c.Renew(t.Context(), g); err != nil {
				t.Fatal(err)
			}
			wantNoEvent(t, ch)
			g2 := acquire(t, c, "k", "a", time.Minute) // a new grant is
			if ev := wantEvent(t, ch, "a"); ev.Grant.Token != g2.Token {
				t.Errorf("event after re-acquire = %+v; want token %d", ev, g2.Token)
			}
		})
	})
	t.Run("many watchers", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := newCoord(t)
			var chs []<-chan tenure.LeaderEvent
			for range 3 {
				ch, err := c.Watch(t.Context(), "k")
				if err != nil {
					t.Fatal(err)
				}
				wantEvent(t, ch, "")
				chs = append(chs, ch)
			}
			other, err := c.Watch(t.Context(), "other")
			if err != nil {
				t.Fatal(err)
			}
			wantEvent(t, other, "")
			acquire(t, c, "k", "a", time.Second)
			for _, ch := range chs {
				wantEvent(t, ch, "a")
			}
			wantNoEvent(t, other)
			time.Sleep(time.Second)
			for _, ch := range chs {
				wantEvent(t, ch, "")
			}
		})
	})
	t.Run("closed when the context ends", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := newCoord(t)
			ctx, cancel := context.WithCancel(t.Context())
			ch, err := c.Watch(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			cancel()
			if _, open, ok := pending(ch); !ok || !open {
				t.Fatalf("watch lost its first event")
			}
			if _, open, ok := pending(ch); !ok || open {
				t.Fatalf("watch open after its context ended; want closed")
			}
			acquire(t, c, "k", "a", time.Second) // no send on the closed channel
		})
	})
	t.Run("expired lease not reported held", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := newCoord(t)
			acquire(t, c, "k", "a", time.Second)
			c.JumpClock(time.Second)
			ch, err := c.Watch(t.Context(), "k")
			if err != nil {
				t.Fatal(err)
			}
			wantEvent(t, ch, "")
			wantNoEvent(t, ch)
		})
	})
	t.Run("ended context", func(t *testing.T) {
		c := newCoord(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := c.Watch(ctx, "k"); !errors.Is(err, context.Canceled) {
			t.Errorf("Watch with an ended context error = %v; want context.Canceled", err)
		}
	})
}
