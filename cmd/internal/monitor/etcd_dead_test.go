package monitor_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/cmd/internal/monitor"
)

// renewing keeps g renewed every ttl/3 until stop is called, which
// returns when each renewal was sent and returned, the last first.
func renewing(t *testing.T, c tenure.Coordinator, g tenure.Grant) (stop func() (sent, returned time.Time)) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var sent, returned time.Time
	wg.Go(func() {
		tk := time.NewTicker(g.TTL / 3)
		defer tk.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
			}
			s := time.Now()
			if _, err := c.Renew(ctx, g); err != nil {
				if ctx.Err() == nil {
					t.Errorf("Renew() error = %v", err)
				}
				return
			}
			sent, returned = s, time.Now()
		}
	})
	return func() (time.Time, time.Time) {
		cancel()
		wg.Wait()
		return sent, returned
	}
}

// A holder seen from outside on etcd (time left in whole seconds): while it
// renews, /status says the TTL granted and renewing; once it stops (dies),
// /status says not renewing before its lease runs out, the expiry is
// stamped when the lease ran out rather than when it was noticed, and the
// next holder's acquisition is stamped after it, so the gap shows.
func TestDeadHolderOnEtcd(t *testing.T) {
	ctx := context.Background()
	c := startEtcd(t)
	const ttl = 4 * time.Second
	mon := newMonitor(t, c, monitor.Config{Prefix: "d/", Poll: 100 * time.Millisecond})
	key := func() monitor.KeyStatus {
		s := mon.Status()
		if len(s.Keys) != 1 {
			return monitor.KeyStatus{}
		}
		return s.Keys[0]
	}
	g, err := c.Acquire(ctx, "d/k", "y#1", ttl)
	if err != nil {
		t.Fatal(err)
	}
	stop := renewing(t, c, g)
	waitFor(t, 5*time.Second, "y in /status", func() bool { return key().Holder == "y" })
	for end := time.Now().Add(2 * ttl); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		k := key()
		if k.Holder != "y" || k.TTLMs == nil || *k.TTLMs != ttl.Milliseconds() || k.Renewing == nil || !*k.Renewing {
			t.Fatalf("/status of a live holder = %+v (ttl %v, renewing %v); want y, ttl_ms %d, renewing", k, k.TTLMs, k.Renewing, ttl.Milliseconds())
		}
	}
	sent, returned := stop()
	waitFor(t, 2*ttl, "not renewing", func() bool { k := key(); return k.Renewing != nil && !*k.Renewing })
	flagged := time.Now()
	if k := key(); !k.Held || flagged.After(returned.Add(ttl)) || flagged.Sub(sent) < ttl/3 {
		t.Errorf("not renewing shown %s after the last renewal was sent, held %t; want after %s (a renewal is due) and before the lease ran out (%s)",
			flagged.Sub(sent), k.Held, ttl/3, ttl)
	}
	expired := func() (e monitor.Event, ok bool) {
		s := mon.Status()
		i := slices.IndexFunc(s.Transitions, func(e monitor.Event) bool { return e.Holder == "y" && e.Reason == monitor.ReasonExpired })
		if i < 0 {
			return monitor.Event{}, false
		}
		return s.Transitions[i], true
	}
	waitFor(t, 3*ttl, "y's expiry", func() bool { _, ok := expired(); return ok })
	noticed := time.Now()
	e, _ := expired()
	// The lease ran out ttl after etcd took the last renewal: between its
	// send and its return. Reads see whole seconds, begun up to a read's
	// time before etcd counted: allow a second and a half below.
	if lo, hi := sent.Add(ttl-1500*time.Millisecond), returned.Add(ttl); e.At.Before(lo) || e.At.After(hi) {
		t.Errorf("expiry stamped %s after the last renewal was sent (noticed %s after); want %s to %s", e.At.Sub(sent), noticed.Sub(sent), lo.Sub(sent), hi.Sub(sent))
	}
	if _, err := c.Acquire(ctx, "d/k", "z#2", ttl); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "z's acquisition", func() bool { return key().Holder == "z" })
	s := mon.Status()
	if len(s.Transitions) < 2 || s.Transitions[0].Holder != "z" || s.Transitions[0].Reason != monitor.ReasonAcquired || s.Transitions[1] != e {
		t.Fatalf("/status transitions = %+v; want acquired z, then y's expiry", s.Transitions)
	}
	// z acquired after the expiry was noticed: its acquisition is stamped
	// no earlier than the read before the one that saw it (allow a second
	// for reads on a loaded machine).
	if a := s.Transitions[0].At; !a.After(e.At) || a.Before(noticed.Add(-time.Second)) {
		t.Errorf("z's acquisition stamped %s after y's expiry, which was noticed %s after it; want more than 0 and about that", a.Sub(e.At), noticed.Sub(e.At))
	}
	if k := key(); k.TTLMs == nil || *k.TTLMs != ttl.Milliseconds() || k.Renewing == nil || !*k.Renewing {
		t.Errorf("/status of the new holder: ttl %v, renewing %v; want %d ms, renewing", k.TTLMs, k.Renewing, ttl.Milliseconds())
	}
}
