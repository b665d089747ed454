package etcdtest_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/etcd"
)

// safeLease is how long after sending the request that produced a grant its
// holder may act, as the Elector computes it with 1% drift and a margin.
func safeLease(ttl time.Duration) time.Duration {
	return ttl - ttl/100 - 100*time.Millisecond
}

// observer polls Leader and checks that the sequence of leaders it sees is a
// sequence of grants: tokens never decrease, and one token always names the
// same holder.
type observer struct {
	t    *testing.T
	c    *etcd.Coordinator
	key  string
	stop context.CancelFunc
	done chan struct{}

	mu      sync.Mutex
	holders map[uint64]string
	last    uint64
}

func observe(t *testing.T, c *etcd.Coordinator, key string) *observer {
	ctx, cancel := context.WithCancel(t.Context())
	o := &observer{t: t, c: c, key: key, stop: cancel, done: make(chan struct{}), holders: map[uint64]string{}}
	go func() {
		defer close(o.done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			cctx, ccancel := context.WithTimeout(ctx, time.Second)
			g, ok, err := c.Leader(cctx, key)
			ccancel()
			if err == nil && ok {
				o.see(g)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return o
}

func (o *observer) see(g tenure.Grant) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if g.Token < o.last {
		o.t.Errorf("Leader(%q) went back from token %d to %v", o.key, o.last, g)
	}
	if h, ok := o.holders[g.Token]; ok && h != g.Holder {
		o.t.Errorf("Leader(%q): token %d named holder %q, now %q", o.key, g.Token, h, g.Holder)
	}
	o.holders[g.Token] = g.Holder
	o.last = max(o.last, g.Token)
}

func (o *observer) close() {
	o.stop()
	<-o.done
}

// contender polls Acquire until it wins, and records when.
type contender struct {
	stop context.CancelFunc
	done chan struct{}

	won   tenure.Grant
	wonAt time.Time // when the winning Acquire returned
}

func contend(t *testing.T, c *etcd.Coordinator, key, holder string, ttl time.Duration, owner tenure.Grant) *contender {
	ctx, cancel := context.WithCancel(t.Context())
	b := &contender{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(b.done)
		for ctx.Err() == nil {
			cctx, ccancel := context.WithTimeout(ctx, time.Second)
			g, err := c.Acquire(cctx, key, holder, ttl)
			ccancel()
			if err == nil {
				b.won, b.wonAt = g, time.Now()
				return
			}
			var he *tenure.HeldError
			if errors.As(err, &he) && (he.Holder != owner.Holder || he.Token != owner.Token) {
				t.Errorf("contender told the key is held by %q token %d; want %v", he.Holder, he.Token, owner)
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return b
}

func (b *contender) close() {
	b.stop()
	<-b.done
}

// holder renews a grant until told to stop, like an Elector: every TTL/4,
// each renewal bounded by the local deadline; it stops acting at the
// deadline or when the grant is reported lost.
type holder struct {
	c        *etcd.Coordinator
	g        tenure.Grant
	deadline time.Time   // local deadline: end of the last safe lease
	lost     bool        // a renewal said ErrLost
	renewed  []time.Time // when each successful renewal was sent
	failed   int         // renewals that failed with another error
}

// run renews until ctx ends or the holder stops acting.
func (h *holder) run(ctx context.Context) {
	for ctx.Err() == nil && !h.lost && time.Now().Before(h.deadline) {
		sent := time.Now()
		rctx, cancel := context.WithDeadline(ctx, h.deadline)
		r, err := h.c.Renew(rctx, h.g)
		cancel()
		switch {
		case err == nil:
			h.renewed = append(h.renewed, sent)
			h.g = r
			h.deadline = sent.Add(safeLease(r.TTL))
		case errors.Is(err, tenure.ErrLost):
			h.lost = true
			return
		default:
			h.failed++
		}
		select {
		case <-ctx.Done():
		case <-time.After(h.g.TTL / 4):
		}
	}
}

func TestRaftLeaderStopDuringTenure(t *testing.T) {
	t.Parallel() // it mostly waits for leases to expire
	c := startCluster(t, 3)
	a := newCoordinator(t, newClient(t, c.endpoints()))
	b := newCoordinator(t, newClient(t, c.endpoints()))
	obs := observe(t, newCoordinator(t, newClient(t, c.endpoints())), "raft/leader")
	defer obs.close()

	const ttl = 2 * time.Second
	sent := time.Now()
	h := &holder{c: a, g: mustAcquire(t, a, "raft/leader", "alice", ttl)}
	h.deadline = sent.Add(safeLease(h.g.TTL))
	first := h.g
	bob := contend(t, b, "raft/leader", "bob", ttl, first)
	defer bob.close()

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.run(ctx)
	}()

	leader := c.leader(t)
	stopped := time.Now()
	leader.stop()
	t.Logf("stopped raft leader %s in %s", leader.cfg.Name, time.Since(stopped))

	// Hold on for three TTLs after the stop, or until alice stops acting.
	select {
	case <-done:
	case <-time.After(3 * ttl):
	}
	cancel()
	<-done
	kept := !h.lost && time.Now().Before(h.deadline)
	if !kept {
		// Alice lost the key or let it lapse: bob must get it.
		select {
		case <-bob.done:
		case <-time.After(2*ttl + 5*time.Second):
		}
	}
	bob.close()

	t.Logf("alice: %d renewals, %d failed, lost = %v, kept = %v; bob won = %v", len(h.renewed), h.failed, h.lost, kept, bob.won.Token != 0)
	if bob.won.Token != 0 {
		// Bob took over: alice must have stopped acting before.
		if bob.wonAt.Before(h.deadline) {
			t.Errorf("bob's grant %v returned %s before alice's local deadline", bob.won, h.deadline.Sub(bob.wonAt))
		}
		if bob.won.Token <= first.Token {
			t.Errorf("bob's token %d; want > alice's %d", bob.won.Token, first.Token)
		}
		return
	}
	if !kept {
		t.Fatalf("alice stopped acting (lost = %v) but bob never acquired the key", h.lost)
	}
	// Alice kept her lease through the leader change: still hers.
	g, ok, err := a.Leader(t.Context(), "raft/leader")
	if err != nil || !ok || g.Token != first.Token || g.Holder != "alice" {
		t.Fatalf("Leader after the leader change = %v, %v, %v; want alice's %v", g, ok, err, first)
	}
	if len(h.renewed) == 0 || h.renewed[len(h.renewed)-1].Before(stopped) {
		t.Errorf("alice kept the key without a successful renewal after the leader stopped")
	}
}

func TestQuorumLossDuringTenure(t *testing.T) {
	t.Parallel() // it mostly waits for leases to expire
	c := startCluster(t, 3)
	a := newCoordinator(t, newClient(t, c.endpoints()))
	b := newCoordinator(t, newClient(t, c.endpoints()))
	survivor := c.members[0]
	w := newCoordinator(t, newClient(t, survivor.cfg.ClientURLs))

	const ttl = 2 * time.Second
	sent := time.Now()
	h := &holder{c: a, g: mustAcquire(t, a, "quorum/k", "alice", ttl)}
	h.deadline = sent.Add(safeLease(h.g.TTL))
	first := h.g
	events, err := w.Watch(t.Context(), "quorum/k")
	if err != nil {
		t.Fatal(err)
	}
	if ev := <-events; !ev.Held || ev.Grant.Token != first.Token {
		t.Fatalf("first watch event = %+v; want held by %v", ev, first)
	}

	// Two of three members go: no quorum, no renewal, no acquisition.
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.run(t.Context())
	}()
	c.members[1].stop()
	c.members[2].stop()
	lostQuorum := time.Now()
	<-done
	if h.lost {
		t.Errorf("renewal without quorum reported the grant lost; want an unknown outcome (error)")
	}
	for _, sent := range h.renewed {
		if sent.After(lostQuorum) {
			t.Errorf("a renewal sent %s after the quorum was lost succeeded", sent.Sub(lostQuorum))
		}
	}
	t.Logf("alice stopped acting %s after the quorum was lost (%d renewals before, %d failed after)", time.Since(lostQuorum), len(h.renewed), h.failed)
	if h.failed == 0 {
		t.Errorf("no renewal failed; want renewals without a quorum to fail")
	}
	cctx, cancel := context.WithTimeout(t.Context(), time.Second)
	if g, err := b.Acquire(cctx, "quorum/k", "bob", ttl); err == nil {
		t.Errorf("Acquire without quorum = %v; want an error", g)
	}
	cancel()

	// The watch through the surviving member requires a raft leader: it
	// closes, and followers fall back to polling.
	select {
	case _, ok := <-events:
		for ok {
			_, ok = <-events
		}
	case <-time.After(15 * time.Second):
		t.Errorf("watch through a member without a leader still open after 15s")
	}

	// Quorum back: whoever holds the key next has a greater token, and bob
	// acquires only after alice's deadline.
	c.startAll(t)
	bob := contend(t, b, "quorum/k", "bob", ttl, first)
	select {
	case <-bob.done:
	case <-time.After(20 * time.Second):
	}
	bob.close()
	if bob.won.Token == 0 {
		t.Fatal("bob never acquired the key after the quorum came back")
	}
	if bob.wonAt.Before(h.deadline) || bob.won.Token <= first.Token {
		t.Errorf("bob's grant %v at %s; want after alice's deadline %s with a token > %d",
			bob.won, bob.wonAt.Format(time.StampMilli), h.deadline.Format(time.StampMilli), first.Token)
	}
}
