package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/pgtest"
	"github.com/tenure-dev/tenure/postgres"
)

// noPolling is a poll interval longer than any of these tests, so that
// events can only come from notifications or lease-expiry timers.
const noPolling = time.Hour

// next waits up to d for an event on w.
func next(t *testing.T, w <-chan tenure.LeaderEvent, d time.Duration, what string) tenure.LeaderEvent {
	t.Helper()
	select {
	case ev, ok := <-w:
		if !ok {
			t.Fatalf("%s: watch channel closed", what)
		}
		return ev
	case <-time.After(d):
		t.Fatalf("%s: no event within %s", what, d)
		return tenure.LeaderEvent{}
	}
}

// listenPIDs returns the sessions of application app that are LISTENing.
func listenPIDs(t *testing.T, dsn, app string) []int {
	t.Helper()
	var pids []int
	queryRow(t, dsn, `SELECT coalesce(array_agg(pid), '{}') FROM pg_stat_activity
		WHERE application_name = $1 AND query LIKE 'LISTEN %'`, []any{app}, &pids)
	return pids
}

// waitFree reads events on w until one says the key is free; held events
// before it must name want.
func waitFree(t *testing.T, w <-chan tenure.LeaderEvent, d time.Duration, want tenure.Grant, what string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ev := next(t, w, time.Until(deadline), what)
		if !ev.Held {
			return
		}
		if ev.Grant.Holder != want.Holder || ev.Grant.Token != want.Token {
			t.Fatalf("%s: event = %+v; want held by %v or free", what, ev, want)
		}
	}
}

// TestWatchEvents: with polling off, a release by another coordinator
// arrives as a notification, also when the watcher never saw the key held;
// with polling on, a new holder is seen at the next poll and its lease's
// expiry on time, by the database's count of the time left.
func TestWatchEvents(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	w := open(t, dsn, postgres.WithPollInterval(noPolling))
	o := open(t, dsn)
	const key = "watch/k"
	ch, err := w.Watch(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if ev := next(t, ch, time.Second, "first event"); ev.Held || ev.Key != key {
		t.Fatalf("first event = %+v; want %q free", ev, key)
	}
	for i := range 3 {
		g, err := o.Acquire(ctx, key, "other", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Release(ctx, g); err != nil {
			t.Fatal(err)
		}
		waitFree(t, ch, 3*time.Second, g, fmt.Sprintf("release %d", i))
	}

	const poll = 100 * time.Millisecond
	pw := open(t, dsn, postgres.WithPollInterval(poll))
	pch, err := pw.Watch(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	next(t, pch, time.Second, "first event")
	const ttl = time.Second
	sent := time.Now()
	g, err := o.Acquire(ctx, key, "other", ttl)
	if err != nil {
		t.Fatal(err)
	}
	if ev := next(t, pch, poll+time.Second, "after Acquire"); !ev.Held || ev.Grant.Token != g.Token {
		t.Fatalf("event = %+v; want held by %v", ev, g)
	}
	ev := next(t, pch, ttl+3*time.Second, "expiry")
	if took := time.Since(sent); ev.Held || took < ttl || took > ttl+time.Second {
		t.Fatalf("event %+v %s after Acquire; want free between %s and %s", ev, took, ttl, ttl+time.Second)
	}
}

// TestWatchListenerKilled kills the LISTEN session: the listener reconnects
// and watchers keep receiving notifications.
func TestWatchListenerKilled(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	const app = "tenure-watch-test"
	w := open(t, pgtest.WithParams(dsn, map[string]string{"application_name": app}), postgres.WithPollInterval(noPolling))
	o := open(t, dsn)
	ch, err := w.Watch(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	next(t, ch, time.Second, "first event")
	var before []int
	for deadline := time.Now().Add(5 * time.Second); len(before) == 0; time.Sleep(10 * time.Millisecond) {
		if before = listenPIDs(t, dsn, app); time.Now().After(deadline) {
			t.Fatal("no LISTEN session")
		}
	}
	var n int
	queryRow(t, dsn, `SELECT count(pg_terminate_backend(pid)) FROM unnest($1::int[]) AS pid`, []any{before}, &n)
	if n != 1 {
		t.Fatalf("terminated %d LISTEN sessions; want 1", n)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		after := listenPIDs(t, dsn, app)
		if len(after) == 1 && after[0] != before[0] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("LISTEN sessions %v after killing %v; want one new session", after, before)
		}
	}
	g, err := o.Acquire(ctx, "k", "other", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Release(ctx, g); err != nil {
		t.Fatal(err)
	}
	waitFree(t, ch, 3*time.Second, g, "release after reconnection")
}

// TestWatchShared: all watchers of a coordinator share one LISTEN session,
// one channel; each sees only its own key's events.
func TestWatchShared(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	ctx := ctxFor(t, time.Minute)
	const app = "tenure-watch-shared"
	w := open(t, pgtest.WithParams(dsn, map[string]string{"application_name": app}), postgres.WithPollInterval(noPolling))
	o := open(t, dsn)
	keys := []string{"a", "b", "c", "d", "e"}
	chans := map[string]<-chan tenure.LeaderEvent{}
	for _, k := range keys {
		ch, err := w.Watch(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		next(t, ch, time.Second, "first event of "+k)
		chans[k] = ch
	}
	for deadline := time.Now().Add(5 * time.Second); len(listenPIDs(t, dsn, app)) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no LISTEN session")
		}
	}
	if pids := listenPIDs(t, dsn, app); len(pids) != 1 {
		t.Fatalf("LISTEN sessions = %v; want exactly one for %d watchers", pids, len(keys))
	}
	g, err := o.Acquire(ctx, "c", "other", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Release(ctx, g); err != nil {
		t.Fatal(err)
	}
	waitFree(t, chans["c"], 3*time.Second, g, "c")
	for _, k := range keys {
		select {
		case ev := <-chans[k]:
			t.Errorf("event on %s = %+v; want none (only c changed)", k, ev)
		default:
		}
	}
}

// TestWatchEnds: a watch's channel closes when its context ends, and every
// watch's when the coordinator closes; afterwards Watch says ErrClosed.
func TestWatchEnds(t *testing.T) {
	t.Parallel()
	dsn := newDB(t)
	c, err := postgres.Dial(ctxFor(t, time.Minute), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wctx, cancel := context.WithCancel(t.Context())
	w1, err := c.Watch(wctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	w2, err := c.Watch(t.Context(), "k")
	if err != nil {
		t.Fatal(err)
	}
	drain := func(w <-chan tenure.LeaderEvent, what string) {
		t.Helper()
		deadline := time.After(5 * time.Second)
		for {
			select {
			case _, ok := <-w:
				if !ok {
					return
				}
			case <-deadline:
				t.Fatalf("%s: channel still open", what)
			}
		}
	}
	cancel()
	drain(w1, "after its context ended")
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	drain(w2, "after Close")
	if _, err := c.Watch(t.Context(), "k"); !errors.Is(err, tenure.ErrClosed) {
		t.Errorf("Watch() after Close error = %v; want ErrClosed", err)
	}
	if _, err := c.Acquire(t.Context(), "k", "h", time.Second); !errors.Is(err, tenure.ErrClosed) {
		t.Errorf("Acquire() after Close error = %v; want ErrClosed", err)
	}
}
