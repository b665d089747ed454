package memory_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/memory"
)

// newCoord returns a coordinator closed when the test ends.
func newCoord(t *testing.T, opts ...memory.Option) *memory.Coordinator {
	t.Helper()
	c := memory.New(opts...)
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close() = %v", err)
		}
	})
	return c
}

func acquire(t *testing.T, c *memory.Coordinator, key, holder string, ttl time.Duration) tenure.Grant {
	t.Helper()
	g, err := c.Acquire(t.Context(), key, holder, ttl)
	if err != nil {
		t.Fatalf("Acquire(%q, %q, %s) error = %v; want nil", key, holder, ttl, err)
	}
	return g
}

// leaderOf returns the holder of key, or "" when it is free.
func leaderOf(t *testing.T, c *memory.Coordinator, key string) string {
	t.Helper()
	g, ok, err := c.Leader(t.Context(), key)
	if err != nil {
		t.Fatalf("Leader(%q) error = %v", key, err)
	}
	if !ok {
		return ""
	}
	return g.Holder
}

// wantLeader checks who holds key now ("" for free).
func wantLeader(t *testing.T, c *memory.Coordinator, key, want string) {
	t.Helper()
	if got := leaderOf(t, c, key); got != want {
		t.Fatalf("at %s: Leader(%q) holder = %q; want %q", now(), key, got, want)
	}
}

// start is when each bubble's clock starts; now() reports time since.
var start = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

func now() time.Duration { return time.Since(start) }

// pending returns the event waiting on ch, if any, after the bubble settles.
func pending(ch <-chan tenure.LeaderEvent) (tenure.LeaderEvent, bool, bool) {
	synctest.Wait()
	select {
	case ev, ok := <-ch:
		return ev, ok, true
	default:
		return tenure.LeaderEvent{}, false, false
	}
}

// wantEvent checks that an event is waiting on ch and that it says holder
// leads ("" for free).
func wantEvent(t *testing.T, ch <-chan tenure.LeaderEvent, holder string) tenure.LeaderEvent {
	t.Helper()
	ev, open, ok := pending(ch)
	switch {
	case !ok:
		t.Fatalf("at %s: no watch event; want one with holder %q", now(), holder)
	case !open:
		t.Fatalf("at %s: watch closed; want an event with holder %q", now(), holder)
	case holder == "" && ev.Held:
		t.Fatalf("at %s: event %+v; want the key free", now(), ev)
	case holder != "" && (!ev.Held || ev.Grant.Holder != holder):
		t.Fatalf("at %s: event %+v; want held by %q", now(), ev, holder)
	}
	return ev
}

func wantNoEvent(t *testing.T, ch <-chan tenure.LeaderEvent) {
	t.Helper()
	if ev, open, ok := pending(ch); ok {
		t.Fatalf("at %s: watch event %+v (open %v); want none", now(), ev, open)
	}
}

func TestTokensStrictlyIncreaseAndAreNeverReused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCoord(t)
		var last uint64
		for i, h := range []string{"a", "b", "a", "a", "c"} {
			g := acquire(t, c, "k", h, time.Second)
			if g.Token != last+1 {
				t.Fatalf("grant %d token = %d; want %d", i, g.Token, last+1)
			}
			last = g.Token
			if i%2 == 0 {
				if err := c.Release(t.Context(), g); err != nil {
					t.Fatal(err)
				}
			} else {
				time.Sleep(time.Second) // let it expire
			}
		}
		if g := acquire(t, c, "other", "a", time.Second); g.Token != 1 {
			t.Errorf("first token of another key = %d; want 1", g.Token)
		}
	})
}

func TestHeldError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCoord(t)
		ga := acquire(t, c, "k", "a", time.Second)
		_, err := c.Acquire(t.Context(), "k", "b", time.Second)
		var he *tenure.HeldError
		if !errors.As(err, &he) || he.Key != "k" || he.Holder != "a" || he.Token != ga.Token {
			t.Fatalf("Acquire by b error = %v; want *tenure.HeldError for k held by a (token %d)", err, ga.Token)
		}
		if !strings.HasPrefix(err.Error(), "memory: ") {
			t.Errorf("error %q; want the prefix %q", err, "memory: ")
		}
		if g, err := c.Renew(t.Context(), ga); err != nil || g.Key != ga.Key || g.Token != ga.Token || g.Holder != ga.Holder || g.TTL != ga.TTL {
			t.Errorf("Renew(ga) after a refused acquire = %v, %v; want %v, nil", g, err, ga)
		}
	})
}

func TestExpiryOnTheCoordinatorClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCoord(t)
		ch, err := c.Watch(t.Context(), "k")
		if err != nil {
			t.Fatal(err)
		}
		wantEvent(t, ch, "")
		g := acquire(t, c, "k", "a", 10*time.Second)
		wantEvent(t, ch, "a")

		time.Sleep(10*time.Second - time.Nanosecond)
		wantLeader(t, c, "k", "a")
		wantNoEvent(t, ch)
		time.Sleep(time.Nanosecond)
		wantEvent(t, ch, "") // the expiry loop told the watcher, unasked
		wantLeader(t, c, "k", "")

		_, err = c.Renew(t.Context(), g)
		if !errors.Is(err, tenure.ErrLost) {
			t.Fatalf("Renew after expiry error = %v; want tenure.ErrLost", err)
		}
		wantLeader(t, c, "k", "")
		if err := c.Release(t.Context(), g); err != nil {
			t.Errorf("Release after expiry = %v; want nil", err)
		}
		wantNoEvent(t, ch)
	})
}

func TestRenewExtendsFromNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCoord(t)
		g := acquire(t, c, "k", "a", 10*time.Second)
		time.Sleep(6 * time.Second)
		if _, err := c.Renew(t.Context(), g); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10*time.Second - time.Nanosecond) // 16s - 1ns: renewed at 6s
		wantLeader(t, c, "k", "a")
		time.Sleep(time.Nanosecond)
		wantLeader(t, c, "k", "")
	})
}

func TestClockRate(t *testing.T) {
	for _, tc := range []struct {
		rate float64
		ttl  time.Duration
		want time.Duration // real time to expiry
	}{
		{2, 10 * time.Second, 5 * time.Second},
		{1.01, 101 * time.Second, 100 * time.Second},
		{0.5, 10 * time.Second, 20 * time.Second},
	} {
		t.Run(fmt.Sprint("rate ", tc.rate), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newCoord(t)
				c.SetClockRate(tc.rate)
				ch, err := c.Watch(t.Context(), "k")
				if err != nil {
					t.Fatal(err)
				}
				wantEvent(t, ch, "")
				acquire(t, c, "k", "a", tc.ttl)
				wantEvent(t, ch, "a")
				time.Sleep(tc.want - time.Millisecond)
				wantLeader(t, c, "k", "a")
				wantNoEvent(t, ch)
				time.Sleep(time.Millisecond)
				wantEvent(t, ch, "")
				wantLeader(t, c, "k", "")
			})
		})
	}
}

func TestClockRateChangeMidLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCoord(t)
		ch, err := c.Watch(t.Context(), "k")
		if err != nil {
			t.Fatal(err)
		}
		wantEvent(t, ch, "")
		acquire(t, c, "k", "a", 10*time.Second)
		wantEvent(t, ch, "a")
		time.Sleep(4 * time.Second)
		c.SetClockRate(2) // 6s left on the coordinator's clock: 3s of real time
		time.Sleep(3*time.Second - time.Millisecond)
		wantNoEvent(t, ch)
		wantLeader(t, c, "k", "a")
		time.Sleep(time.Millisecond)
		wantEvent(t, ch, "")
		if now() != 7*time.Second {
			t.Errorf("expired at %s; want 7s", now())
		}
	})
}

func TestJumpClock(t *testing.T) {
	t.Run("forward past expiry", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := newCoord(t)
			ch, err := c.Watch(t.Context(), "k")
			if err != nil {
				t.Fatal(err)
			}
			g := acquire(t, c, "k", "a", 10*time.Second)
			wantEvent(t, ch, "a")
			c.JumpClock(9 * time.Second)
			wantNoEvent(t, ch)
			wantLeader(t, c, "k", "a")
			c.JumpClock(time.Second)
			wantEvent(t, ch, "") // at once, no real time passed
			if now() != 0 {
				t.Errorf("expired at %s of real time; want 0s", now())
			}
			if _, err := c.Renew(t.Context(), g); !errors.Is(err, tenure.ErrLost) {
				t.Errorf("Renew after the jump error = %v; want tenure.ErrLost", err)
			}
			if g2 := acquire(t, c, "k", "b", time.Second); g2.Token <= g.Token {
				t.Errorf("token after jump = %d; want > %d", g2.Token, g.Token)
			}
		})
	})
	t.Run("backward", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := newCoord(t)
			acquire(t, c, "k", "a", 10*time.Second)
			c.JumpClock(-5 * time.Second)
			time.Sleep(15*time.Second - time.Nanosecond)
			wantLeader(t, c, "k", "a")
			time.Sleep(time.Nanosecond)
			wantLeader(t, c, "k", "")
		})
	})
}

func TestSetClockRatePanics(t *testing.T) {
	for _, r := range []float64{0, -1, posInf(), nan()} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("SetClockRate(%v) did not panic", r)
				}
			}()
			c := memory.New()
			defer c.Close()
			c.SetClockRate(r)
		}()
	}
}

func posInf() float64 { z := 0.0; return 1 / z }
func nan() float64    { z := 0.0; return z / z }

func TestWithMinTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCoord(t, memory.WithMinTTL(2*time.Second))
		g := acquire(t, c, "k", "a", 100*time.Millisecond)
		if g.TTL != 2*time.Second {
			t.Errorf("granted TTL = %s; want 2s (the minimum)", g.TTL)
		}
		g2 := acquire(t, c, "k2", "a", 3*time.Second)
		if g2.TTL != 3*time.Second {
			t.Errorf("granted TTL = %s; want 3s (above the minimum)", g2.TTL)
		}
		time.Sleep(2*time.Second - time.Nanosecond)
		wantLeader(t, c, "k", "a")
		time.Sleep(time.Nanosecond)
		wantLeader(t, c, "k", "")
		if _, err := c.Acquire(t.Context(), "k", "a", 0); !errors.Is(err, tenure.ErrInvalidTTL) {
			t.Errorf("Acquire with TTL 0 error = %v; want tenure.ErrInvalidTTL despite the minimum", err)
		}
	})
}

func TestBadInput(t *testing.T) {
	c := newCoord(t)
	ctx := t.Context()
	for _, tc := range []struct {
		name        string
		key, holder string
		ttl         time.Duration
		want        error
		text        string
	}{
		{"key", "/abs", "a", time.Second, tenure.ErrInvalidKey, `"/abs"`},
		{"holder", "k", "", time.Second, tenure.ErrInvalidHolder, "holder is empty"},
		{"ttl", "k", "a", -time.Second, tenure.ErrInvalidTTL, "-1s"},
	} {
		_, err := c.Acquire(ctx, tc.key, tc.holder, tc.ttl)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) || !strings.HasPrefix(err.Error(), "memory: ") {
			t.Errorf("%s: Acquire error = %v; want %v naming %s, prefixed %q", tc.name, err, tc.want, tc.text, "memory: ")
		}
	}
	if _, err := c.Renew(ctx, tenure.Grant{Key: "k", Holder: "a"}); !errors.Is(err, tenure.ErrInvalidGrant) {
		t.Errorf("Renew of a zero-token grant error = %v; want tenure.ErrInvalidGrant", err)
	}
	if err := c.Release(ctx, tenure.Grant{Key: "k", Holder: "a"}); !errors.Is(err, tenure.ErrInvalidGrant) {
		t.Errorf("Release of a zero-token grant error = %v; want tenure.ErrInvalidGrant", err)
	}
	if _, err := c.Renew(ctx, tenure.Grant{Key: "never", Holder: "a", Token: 1}); !errors.Is(err, tenure.ErrLost) {
		t.Errorf("Renew on a key never granted error = %v; want tenure.ErrLost", err)
	}
	if _, err := c.Watch(ctx, "a//b"); !errors.Is(err, tenure.ErrInvalidKey) {
		t.Errorf("Watch(%q) error = %v; want tenure.ErrInvalidKey", "a//b", err)
	}
}
