package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/etcd"
	"github.com/tenure-dev/tenure/internal/etcdbin"
)

// waitFirst waits until leader's view of the line shows holder first for key.
func waitFirst(t *testing.T, leader *etcd.Coordinator, key, holder string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if h, ok := etcd.LineFirst(leader, key); ok && (h == holder || strings.HasSuffix(holder, "#") && strings.HasPrefix(h, holder)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the leader never saw %q waiting in line for %q", holder, key)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitLineLen waits until c sees n candidates waiting for key, failing
// after 10s.
func waitLineLen(t *testing.T, c *etcd.Coordinator, key string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for etcd.LineLen(c, key) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d candidates in line for %q after 10s; want %d", etcd.LineLen(c, key), key, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// nextEvent returns the next event on ch, failing after 10s.
func nextEvent(t *testing.T, ch <-chan tenure.LeaderEvent) tenure.LeaderEvent {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("watch closed")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event within 10s")
	}
	return tenure.LeaderEvent{}
}

// aliceLeads starts an etcd member with two coordinators on it: leader, on
// which alice holds key (old), and cand, for candidates.
func aliceLeads(t *testing.T, key string, ttl time.Duration) (eps []string, leader, cand *etcd.Coordinator, old tenure.Grant) {
	t.Helper()
	eps = startCluster(t, 1).endpoints()
	leader = newCoordinator(t, newClient(t, eps))
	cand = newCoordinator(t, newClient(t, eps))
	return eps, leader, cand, mustAcquire(t, leader, key, "alice", ttl)
}

// handToBob has alice's grant old on key released by leader to bob, who
// waits in line on cand (until wctx ends), and waits until bob's watch shows
// the key handed to him.
func handToBob(t *testing.T, wctx context.Context, leader, cand *etcd.Coordinator, old tenure.Grant, ttl time.Duration) {
	t.Helper()
	ch, err := cand.WatchAsCandidate(wctx, old.Key, "bob", ttl)
	if err != nil {
		t.Fatal(err)
	}
	waitFirst(t, leader, old.Key, "bob")
	if err := leader.Release(ctx(t), old); err != nil {
		t.Fatal(err)
	}
	for ev := nextEvent(t, ch); !ev.Held || ev.Grant.Holder != "bob"; ev = nextEvent(t, ch) {
	}
}

// A release hands the key to the candidate waiting in line, in one write:
// the candidate's watch shows it held by the candidate with a greater
// token, the candidate's Acquire returns that grant without a round trip,
// the grant renews and fences like any other, and the old grant is lost.
func TestReleaseHandsOffToCandidate(t *testing.T) {
	onBothEtcds(t, testReleaseHandsOffToCandidate)
}

// onBothEtcds runs test on an embedded etcd and on the etcd binary
// (Debian's is 3.4): the hand-off's transactions must hold on both.
func onBothEtcds(t *testing.T, test func(t *testing.T, eps []string)) {
	t.Run("embedded", func(t *testing.T) { test(t, startCluster(t, 1).endpoints()) })
	t.Run("binary", func(t *testing.T) { test(t, []string{etcdbin.New(t).URL}) })
}

func testReleaseHandsOffToCandidate(t *testing.T, eps []string) {
	leader := newCoordinator(t, newClient(t, eps))
	cl, rc := countingClient(t, eps)
	cand := newCoordinator(t, cl)
	const key, ttl = "handoff/a", 10 * time.Second

	old := mustAcquire(t, leader, key, "alice", ttl)
	wctx, stop := context.WithCancel(t.Context())
	defer stop()
	ch, err := cand.WatchAsCandidate(wctx, key, "bob", ttl)
	if err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, ch); !ev.Held || ev.Grant.Holder != "alice" {
		t.Fatalf("first event %+v; want held by alice", ev)
	}
	waitFirst(t, leader, key, "bob")

	if err := leader.Release(ctx(t), old); err != nil {
		t.Fatal(err)
	}
	ev := nextEvent(t, ch)
	for ev.Held && ev.Grant.Holder == "alice" {
		ev = nextEvent(t, ch)
	}
	if !ev.Held || ev.Grant.Holder != "bob" || ev.Grant.Token <= old.Token {
		t.Fatalf("event after the release %+v; want held by bob with a token above %d", ev, old.Token)
	}
	if !etcd.WaitLineReady(cand) { // it follows the line from its candidacy on
		t.Fatal("the candidate's coordinator does not follow the line")
	}
	rc.reset()
	g, err := cand.Acquire(ctx(t), key, "bob", ttl)
	if err != nil {
		t.Fatal(err)
	}
	calls := rc.reset()
	delete(calls, "/etcdserverpb.Watch/Watch") // the line follower's stream may open late
	if len(calls) != 0 {
		t.Errorf("Acquire of a handed-over key made calls %v; want none", calls)
	}
	if g.Token != ev.Grant.Token || g.TTL <= 0 || g.TTL > ttl {
		t.Errorf("Acquire() = %v; want token %d and a TTL in (0, %s]", g, ev.Grant.Token, ttl)
	}
	if l, ok, err := leader.Leader(ctx(t), key); err != nil || !ok || l.Holder != "bob" || l.Token != g.Token {
		t.Errorf("Leader() = %v, %v, %v; want bob with token %d", l, ok, err, g.Token)
	}
	if _, err := cand.Renew(ctx(t), g); err != nil {
		t.Errorf("Renew(handed grant) = %v", err)
	}
	if _, err := leader.Renew(ctx(t), old); !errors.Is(err, tenure.ErrLost) {
		t.Errorf("Renew(old grant) = %v; want ErrLost", err)
	}
	// A second Acquire by the same holder gets a new grant, never the
	// token already given.
	g2, err := cand.Acquire(ctx(t), key, "bob", ttl)
	if err != nil || g2.Token <= g.Token {
		t.Errorf("second Acquire() = %v, %v; want a new grant above token %d", g2, err, g.Token)
	}
	if err := cand.Release(ctx(t), g2); err != nil {
		t.Fatal(err)
	}
	// The hand-off consumed bob's line entry; nobody else waits, so bob's
	// release freed the key.
	stop()
	waitFree(t, leader, key, time.Now().Add(10*time.Second))
}

// A candidate that stopped waiting is not handed the key: the release frees
// it.
func TestReleaseSkipsCandidateThatLeft(t *testing.T) {
	const key, ttl = "handoff/left", 10 * time.Second
	_, leader, cand, old := aliceLeads(t, key, ttl)
	wctx, stop := context.WithCancel(t.Context())
	if _, err := cand.WatchAsCandidate(wctx, key, "bob", ttl); err != nil {
		t.Fatal(err)
	}
	waitFirst(t, leader, key, "bob")
	stop()
	waitLineLen(t, leader, key, 0) // bob's entry is gone
	if err := leader.Release(ctx(t), old); err != nil {
		t.Fatal(err)
	}
	if l, ok, err := leader.Leader(ctx(t), key); err != nil || ok {
		t.Errorf("Leader() after release = %v, %v, %v; want free", l, ok, err)
	}
}

// A key handed to a candidate whose watch then ends before any Acquire took
// it is released by the candidate: it never stays held by a holder that no
// longer wants it.
func TestHandedKeyReleasedWhenCandidateStops(t *testing.T) {
	const key, ttl = "handoff/abandoned", 10 * time.Second
	_, leader, cand, old := aliceLeads(t, key, ttl)
	wctx, stop := context.WithCancel(t.Context())
	handToBob(t, wctx, leader, cand, old, ttl)
	stop()
	waitFree(t, leader, key, time.Now().Add(10*time.Second))
	// And the candidate never returns that grant afterwards.
	g, err := cand.Acquire(ctx(t), key, "bob", ttl)
	if err != nil {
		t.Fatal(err)
	}
	if g.Token <= old.Token {
		t.Errorf("Acquire() = %v; want a fresh grant above %d", g, old.Token)
	}
}

// Two electors on etcd hand the key back and forth: each lets go once its
// successor waits in line, and the successor's term begins with a greater
// token, after its predecessor's function returned, on the key the release
// rewrote for it (its CreateRevision never changes: no delete and create).
func TestElectorsHandOff(t *testing.T) {
	onBothEtcds(t, testElectorsHandOff)
}

func testElectorsHandOff(t *testing.T, eps []string) {
	raw := newClient(t, eps)
	var coords [2]*etcd.Coordinator
	for i := range coords {
		coords[i] = newCoordinator(t, newClient(t, eps))
	}
	const key = "handoff/electors"
	type term struct {
		node  int
		token uint64
	}
	terms := make(chan term, 16)
	release := [2]chan struct{}{make(chan struct{}, 1), make(chan struct{}, 1)}
	var active [2]atomic.Bool
	runCtx, stopAll := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for i := range coords {
		cfg := tenure.DefaultConfig()
		cfg.Key, cfg.Holder, cfg.TTL, cfg.RetryPeriod = key, []string{"n0", "n1"}[i], 10*time.Second, 2500*time.Millisecond
		e, err := tenure.NewElector(coords[i], cfg)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for runCtx.Err() == nil {
				_ = e.Run(runCtx, func(ctx context.Context, tm *tenure.Term) error {
					if active[1-i].Load() {
						t.Errorf("node %d began term %d while node %d's function ran", i, tm.Token(), 1-i)
					}
					active[i].Store(true)
					defer active[i].Store(false)
					terms <- term{i, tm.Token()}
					select {
					case <-release[i]:
					case <-ctx.Done():
					}
					return nil // Run releases the key and returns; it runs again
				})
			}
		})
	}
	defer func() {
		stopAll()
		wg.Wait()
	}()
	createRev := func() int64 {
		resp, err := raw.Get(ctx(t), coords[0].EtcdKey(key))
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("Get(%q) = %v, %v; want the held key", key, resp, err)
		}
		return resp.Kvs[0].CreateRevision
	}
	last := <-terms
	created := createRev()
	for range 4 {
		waitFirst(t, coords[last.node], key, []string{"n0", "n1"}[1-last.node]+"#")
		release[last.node] <- struct{}{}
		select {
		case next := <-terms:
			if next.node == last.node || next.token <= last.token {
				t.Fatalf("term %+v after %+v; want the other node with a greater token", next, last)
			}
			if c := createRev(); c != created {
				t.Errorf("term %+v: the key was created anew at %d (was %d); want it handed over in place", next, c, created)
			}
			last = next
		case <-time.After(5 * time.Second):
			t.Fatalf("no successor within 5s of node %d letting go", last.node)
		}
	}
}

// Two Acquires of one key by one holder in flight at once never return the
// same token (the second supersedes the first, as it always has): a key a
// holder put itself is never taken as handed over, even when the other
// call's reply has not arrived yet.
func TestConcurrentAcquiresNeverShareToken(t *testing.T) {
	eps := startCluster(t, 1).endpoints()
	c := newCoordinator(t, newClient(t, eps))
	const key, holder, ttl = "handoff/concurrent", "h#1", 10 * time.Second
	for round := range 150 {
		var wg sync.WaitGroup
		var gs [2]tenure.Grant
		var errs [2]error
		for j := range 2 {
			wg.Go(func() { gs[j], errs[j] = c.Acquire(ctx(t), key, holder, ttl) })
		}
		wg.Wait()
		if errs[0] == nil && errs[1] == nil && gs[0].Token == gs[1].Token {
			t.Fatalf("round %d: both Acquires returned token %d", round, gs[0].Token)
		}
		for j := range 2 {
			if errs[j] == nil {
				_ = c.Release(ctx(t), gs[j])
			}
		}
	}
}

// A handed-over grant that a caller holds, renewed through another
// coordinator (a restarted process adopts the grant's lease), is never
// returned again by that coordinator's Acquire.
func TestRenewedHandedGrantNotClaimedAgain(t *testing.T) {
	const key, ttl = "handoff/renewed", 10 * time.Second
	eps, leader, cand, old := aliceLeads(t, key, ttl)
	other := newCoordinator(t, newClient(t, eps))
	wctx, stop := context.WithCancel(t.Context())
	defer stop()
	handToBob(t, wctx, leader, cand, old, ttl)
	g := mustAcquire(t, cand, key, "bob", ttl)
	if _, err := other.Renew(ctx(t), g); err != nil {
		t.Fatal(err)
	}
	g2, err := other.Acquire(ctx(t), key, "bob", ttl)
	if err != nil {
		t.Fatal(err)
	}
	if g2.Token == g.Token {
		t.Errorf("Acquire() through the coordinator that renewed it returned token %d again", g.Token)
	}
}

// A line entry left behind (its leave failed, and the holder's lease lives
// on through its other grants) would get every release of the key handed to
// a holder that does not want it. The holder's next renewal clears it, and
// releases a key handed to it meanwhile. Control: the same entry, not
// recorded as left behind, keeps the key held while the holder renews.
func TestLeftoverLineEntryClearedByRenewal(t *testing.T) {
	for _, recorded := range []bool{true, false} {
		t.Run(fmt.Sprintf("recorded=%v", recorded), func(t *testing.T) {
			eps := startCluster(t, 1).endpoints()
			raw := newClient(t, eps)
			leader := newCoordinator(t, newClient(t, eps))
			cand := newCoordinator(t, newClient(t, eps))
			const key, ttl = "handoff/leftover", 5 * time.Second
			mine := mustAcquire(t, cand, "handoff/mine", "bob", ttl) // bob's lease lives on
			lease := leaseOf(t, cand, mine.Key)
			old := mustAcquire(t, leader, key, "alice", ttl)
			// The entry a failed leave left behind: recorded, or (the control)
			// not.
			var entry string
			if recorded {
				entry = etcd.LeftInLine(cand, key, "bob", int64(lease))
			} else {
				entry = etcd.LeftInLine(other(t, eps), key, "bob", int64(lease))
			}
			if _, err := raw.Put(ctx(t), entry, "bob", clientv3.WithLease(lease)); err != nil {
				t.Fatal(err)
			}
			waitFirst(t, leader, key, "bob")
			if err := leader.Release(ctx(t), old); err != nil {
				t.Fatal(err)
			}
			var err error
			if mine, err = cand.Renew(ctx(t), mine); err != nil {
				t.Fatal(err)
			}
			l, held, err := leader.Leader(ctx(t), key)
			switch {
			case err != nil:
				t.Fatal(err)
			case recorded && held:
				t.Errorf("after bob's renewal the key is held by %q; want it released", l.Holder)
			case !recorded && !held:
				t.Error("control: the key is free without the entry recorded; want it still handed to bob")
			}
			if recorded {
				resp, err := raw.Get(ctx(t), entry)
				if err != nil || len(resp.Kvs) != 0 {
					t.Errorf("line entry after the renewal: %v, %v; want it gone", resp, err)
				}
			}
		})
	}
}

// A key handed to a holder's line entry is taken only by the coordinator
// that put the entry: another coordinator that shares the holder's lease
// (it renewed one of the holder's grants) never returns the same token.
func TestHandedKeyTakenOnlyByCandidatesCoordinator(t *testing.T) {
	eps := startCluster(t, 1).endpoints()
	leader := newCoordinator(t, newClient(t, eps))
	cand := newCoordinator(t, newClient(t, eps))
	other := newCoordinator(t, newClient(t, eps))
	const key, ttl = "handoff/shared-lease", 10 * time.Second
	mine := mustAcquire(t, cand, "handoff/mine", "bob", ttl)
	mustAcquire(t, other, "handoff/others", "carol", ttl) // other follows the line too
	if _, err := other.Renew(ctx(t), mine); err != nil {  // other adopts bob's lease
		t.Fatal(err)
	}
	old := mustAcquire(t, leader, key, "alice", ttl)
	wctx, stop := context.WithCancel(t.Context())
	defer stop()
	ch, err := cand.WatchAsCandidate(wctx, key, "bob", ttl)
	if err != nil {
		t.Fatal(err)
	}
	waitFirst(t, leader, key, "bob")
	// other waits for the key as bob as well, on the lease it adopted.
	if _, err := other.WatchAsCandidate(wctx, key, "bob", ttl); err != nil {
		t.Fatal(err)
	}
	if !etcd.WaitLineReady(other) {
		t.Fatal("other does not follow the line")
	}
	time.Sleep(100 * time.Millisecond) // it would have stood in line by now
	if err := leader.Release(ctx(t), old); err != nil {
		t.Fatal(err)
	}
	for ev := nextEvent(t, ch); !ev.Held || ev.Grant.Holder != "bob"; ev = nextEvent(t, ch) {
	}
	g := mustAcquire(t, cand, key, "bob", ttl)
	g2, err := other.Acquire(ctx(t), key, "bob", ttl)
	if err != nil {
		t.Fatal(err)
	}
	if g2.Token == g.Token {
		t.Errorf("two coordinators returned token %d to two callers", g.Token)
	}
	if _, err := cand.Renew(ctx(t), g); !errors.Is(err, tenure.ErrLost) {
		t.Errorf("Renew of the superseded grant = %v; want ErrLost", err)
	}
}

// Clearing a line entry left behind never touches the entry of an elector
// of the same holder that stands in line again on the same lease (each wait
// has an entry of its own): the key is handed to that elector on the next
// release.
func TestLeftoverClearingKeepsLiveEntry(t *testing.T) {
	eps := startCluster(t, 1).endpoints()
	raw := newClient(t, eps)
	leader := newCoordinator(t, newClient(t, eps))
	cand := newCoordinator(t, newClient(t, eps))
	const key, ttl = "handoff/requeued", 5 * time.Second
	mine := mustAcquire(t, cand, "handoff/mine", "bob", ttl)
	lease := leaseOf(t, cand, mine.Key)
	old := mustAcquire(t, leader, key, "alice", ttl)
	left := etcd.LeftInLine(cand, key, "bob", int64(lease)) // a lost reply: the entry may be there
	if _, err := raw.Put(ctx(t), left, "bob", clientv3.WithLease(lease)); err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(t.Context())
	defer stop()
	if _, err := cand.WatchAsCandidate(wctx, key, "bob", ttl); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for { // both entries in etcd
		resp, err := raw.Get(ctx(t), "\x00tenure-line\x00"+cand.Prefix()+key+"\x00", clientv3.WithPrefix())
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("line entries: %d; want the leftover and the new wait", len(resp.Kvs))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := cand.Renew(ctx(t), mine); err != nil {
		t.Fatal(err)
	}
	resp, err := raw.Get(ctx(t), "\x00tenure-line\x00"+cand.Prefix()+key+"\x00", clientv3.WithPrefix())
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Key) == left {
		t.Fatalf("line entries after the renewal: %v, %v; want only the new wait's", resp, err)
	}
	waitLineLen(t, leader, key, 1) // the leader's view loses the leftover
	if err := leader.Release(ctx(t), old); err != nil {
		t.Fatal(err)
	}
	if l, held, err := leader.Leader(ctx(t), key); err != nil || !held || l.Holder != "bob" {
		t.Errorf("after the release: %v, %v, %v; want the key handed to bob", l, held, err)
	}
}

// other returns another coordinator on eps.
func other(t *testing.T, eps []string) *etcd.Coordinator {
	return newCoordinator(t, newClient(t, eps))
}

// WatchAsCandidate refuses a malformed key, holder or TTL with the error
// that names it, and puts nothing in line.
func TestWatchAsCandidateBadInput(t *testing.T) {
	eps := startCluster(t, 1).endpoints()
	c := newCoordinator(t, newClient(t, eps))
	for _, tc := range []struct {
		key, holder string
		ttl         time.Duration
		want        error
	}{
		{"/bad", "bob", time.Second, tenure.ErrInvalidKey},
		{"ok", "", time.Second, tenure.ErrInvalidHolder},
		{"ok", "bob", 0, tenure.ErrInvalidTTL},
	} {
		if _, err := c.WatchAsCandidate(t.Context(), tc.key, tc.holder, tc.ttl); !errors.Is(err, tc.want) {
			t.Errorf("WatchAsCandidate(%q, %q, %s) = %v; want %v", tc.key, tc.holder, tc.ttl, err, tc.want)
		}
	}
	if n := etcd.LineLen(c, "ok"); n != 0 {
		t.Errorf("%d entries in line after refused calls; want 0", n)
	}
}
