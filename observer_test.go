package tenure_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure/internal/display"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/memory"
)

// seen records what an Observer reports.
type seen struct {
	mu  sync.Mutex
	evs []tenure.LeaderEvent
}

func (s *seen) add(ev tenure.LeaderEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evs = append(s.evs, ev)
}

// holders lists the reported holders' display names, "-" for free.
func (s *seen) holders() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, ev := range s.evs {
		name := "-"
		if ev.Held {
			name, _ = display.SplitIdentity(ev.Grant.Holder)
		}
		out = append(out, name)
	}
	return out
}

// observe runs an Observer of "scheduler" on c until the returned stop is
// called.
func observe(t *testing.T, c tenure.Coordinator, s *seen) (*tenure.Observer, func() error) {
	t.Helper()
	o, err := tenure.NewObserver(c, "scheduler")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- o.Run(ctx, s.add) }()
	return o, func() error { cancel(); return <-done }
}

// pollOnly hides the memory coordinator's Watch: an Observer must poll.
type pollOnly struct{ tenure.Coordinator }

func TestObserverFollowsLeaders(t *testing.T) {
	for _, tc := range []struct {
		name string
		wrap func(*memory.Coordinator) tenure.Coordinator
		lag  time.Duration // how late a change may be seen
	}{
		{"watch", func(c *memory.Coordinator) tenure.Coordinator { return c }, 0},
		{"poll", func(c *memory.Coordinator) tenure.Coordinator { return pollOnly{c} }, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := memory.New()
				defer c.Close()
				var s seen
				o, stop := observe(t, tc.wrap(c), &s)
				settle := func() { time.Sleep(tc.lag + time.Millisecond); synctest.Wait() }
				settle()
				if ev, ok := o.Leader(); !ok || ev.Held {
					t.Fatalf("Leader() before anyone leads = %+v, %v; want free, known", ev, ok)
				}
				ga, err := c.Acquire(t.Context(), "scheduler", "a#1", 3*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				settle()
				if ev, ok := o.Leader(); !ok || !ev.Held || ev.Grant.Holder != "a#1" || ev.Grant.Token != ga.Token {
					t.Fatalf("Leader() while a leads = %+v, %v; want a with token %d", ev, ok, ga.Token)
				}
				if err := c.Release(t.Context(), ga); err != nil {
					t.Fatal(err)
				}
				settle()
				if _, err := c.Acquire(t.Context(), "scheduler", "b#1", 3*time.Second); err != nil {
					t.Fatal(err)
				}
				settle()
				time.Sleep(3 * time.Second) // b never renews: its lease expires
				settle()
				if err := stop(); !errors.Is(err, context.Canceled) {
					t.Fatalf("Run() after its context ended = %v; want context.Canceled", err)
				}
				want := []string{"-", "a", "-", "b", "-"}
				if got := s.holders(); len(got) != len(want) || !equal(got, want) {
					t.Fatalf("changes reported = %v; want %v (each change once)", got, want)
				}
			})
		})
	}
}

func equal(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

func TestObserverStopsOnClosedCoordinator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := memory.New()
		c.Close()
		o, err := tenure.NewObserver(c, "scheduler")
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Run(t.Context(), nil); !errors.Is(err, tenure.ErrClosed) {
			t.Fatalf("Run() on a closed coordinator = %v; want tenure.ErrClosed", err)
		}
		if _, err := tenure.NewObserver(c, "/bad"); !errors.Is(err, tenure.ErrInvalidKey) {
			t.Fatalf("NewObserver(\"/bad\") = %v; want tenure.ErrInvalidKey", err)
		}
	})
}
