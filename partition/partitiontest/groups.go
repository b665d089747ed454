package partitiontest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/partition"
)

// member is one partition.Group running on its own coordinator.
type member struct {
	coord  partition.Coordinator
	g      *partition.Group
	cancel context.CancelFunc
	done   chan error
}

// fleet runs members of one group and records the terms they run.
type fleet struct {
	t       *testing.T
	s       suite
	cfg     partition.Config
	members map[string]*member

	mu     sync.Mutex
	tokens map[string][]uint64 // partition key → tokens in the order their terms began
	ends   []ended             // terms that ended, in the order reported
}

// ended is a term of member who that ended (a Transition of kind other
// than Elected).
type ended struct {
	who string
	tr  tenure.Transition
}

func (s suite) fleet(t *testing.T, p int, ttl time.Duration) *fleet {
	cfg := partition.DefaultConfig()
	cfg.Key = groupName(t)
	cfg.Partitions = p
	cfg.TTL = ttl
	cfg.Margin = ttl / 5
	f := &fleet{t: t, s: s, cfg: cfg, members: map[string]*member{}, tokens: map[string][]uint64{}}
	t.Cleanup(f.stopAll)
	return f
}

func (f *fleet) run(ctx context.Context, p partition.Partition, t *tenure.Term) error {
	f.mu.Lock()
	f.tokens[p.Key] = append(f.tokens[p.Key], t.Token())
	f.mu.Unlock()
	<-ctx.Done()
	return nil
}

func (f *fleet) start(name string) { f.startAs(name, name) }

// startAs starts member name with identity holder#1 on a coordinator of its
// own: members given one holder are one member ID, as processes given one
// Holder and Instance are.
func (f *fleet) startAs(name, holder string) {
	cfg := f.cfg
	cfg.Holder, cfg.Instance = holder, "1"
	cfg.OnTransition = func(tr tenure.Transition) {
		if tr.Kind != tenure.Elected {
			f.mu.Lock()
			f.ends = append(f.ends, ended{name, tr})
			f.mu.Unlock()
		}
	}
	c := f.s.newCoordinator(f.t)
	g, err := partition.New(c, cfg)
	if err != nil {
		f.t.Fatalf("partition.New(%s) error = %v", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &member{coord: c, g: g, cancel: cancel, done: make(chan error, 1)}
	go func() { m.done <- g.Run(ctx, f.run) }()
	f.members[name] = m
}

// stop leaves gracefully (crash false) or closes the member's coordinator
// first, so that it cannot leave and its lease expires (crash true).
func (f *fleet) stop(name string, crash bool) {
	m := f.members[name]
	delete(f.members, name)
	if crash {
		_ = m.coord.Close()
	}
	m.cancel()
	err := <-m.done
	if !crash && !errors.Is(err, context.Canceled) {
		f.t.Errorf("Run(%s) = %v; want context.Canceled", name, err)
	}
	_ = m.coord.Close()
}

func (f *fleet) stopAll() {
	for name := range f.members {
		f.stop(name, false)
	}
}

// owners returns who runs each partition, from the members' snapshots.
func (f *fleet) owners() map[string]string {
	out := map[string]string{}
	for name, m := range f.members {
		for _, o := range m.g.Snapshot().Owned {
			if prev, dup := out[o.Partition.Key]; dup {
				f.t.Errorf("partition %s is run by %s and %s at once", o.Partition.Key, prev, name)
			}
			out[o.Partition.Key] = name
		}
	}
	return out
}

// settled reports whether every partition is run, none by more than
// ⌈P/N⌉ of a member.
func (f *fleet) settled() bool {
	own := f.owners()
	if len(own) != f.cfg.Partitions {
		return false
	}
	limit := (f.cfg.Partitions + len(f.members) - 1) / len(f.members)
	load := map[string]int{}
	for _, m := range own {
		if load[m]++; load[m] > limit {
			return false
		}
	}
	return true
}

// await polls cond until it holds and returns how long that took; it fails
// after limit.
func (f *fleet) await(what string, limit time.Duration, cond func() bool) time.Duration {
	f.t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			f.t.Fatalf("%s: not within %s; owners %v", what, limit, f.owners())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

// checkTokens fails for a partition whose terms' tokens did not increase.
func (f *fleet) checkTokens() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for key, ts := range f.tokens {
		for i := 1; i < len(ts); i++ {
			if ts[i] <= ts[i-1] {
				f.t.Errorf("%s: term with token %d began after one with token %d", key, ts[i], ts[i-1])
			}
		}
	}
}

func (s suite) balance(t *testing.T) {
	f := s.fleet(t, 60, 10*time.Second)
	for _, n := range []string{"a", "b", "c", "d"} {
		f.start(n)
	}
	f.await("4 members settle", 10*time.Second+s.o.slack, f.settled)
	tab, err := partition.ReadTable(ctx(t), f.members["a"].coord, f.cfg.Key, f.cfg.PartitionNames())
	if err != nil {
		t.Fatalf("ReadTable() error = %v", err)
	}
	if tab.Stats.Unowned != 0 || tab.Cap != 15 || len(tab.Members) != 4 {
		t.Errorf("ReadTable() = %d unowned, cap %d, %d members; want 0, 15, 4", tab.Stats.Unowned, tab.Cap, len(tab.Members))
	}
	for _, m := range tab.Members {
		if m.Owned > tab.Cap {
			t.Errorf("member %s owns %d partitions; want ≤ %d", m.ID, m.Owned, tab.Cap)
		}
	}
	f.stopAll()
	f.checkTokens()
}

// plannedLeave checks that a member that leaves gracefully hands its
// partitions over well before its TTL would have run out.
func (s suite) plannedLeave(t *testing.T) {
	ttl := 10 * time.Second
	f := s.fleet(t, 30, ttl)
	for _, n := range []string{"a", "b", "c"} {
		f.start(n)
	}
	f.await("3 members settle", ttl+s.o.slack, f.settled)
	f.stop("a", false)
	took := f.await("a's partitions re-owned after it left", ttl+s.o.slack, f.settled)
	if took >= ttl {
		t.Errorf("hand-over after a planned leave took %s; want less than the TTL %s (no wait for expiry)", took, ttl)
	}
	t.Logf("planned leave: partitions re-owned in %s", took)
	f.stopAll()
	f.checkTokens()
}

// crash checks that a member whose coordinator is closed under it (it cannot
// leave) loses its partitions at its lease's expiry, and that they run again
// elsewhere with greater tokens.
func (s suite) crash(t *testing.T) {
	f := s.fleet(t, 20, s.o.ttl)
	f.cfg.Margin = s.o.ttl / 4
	for _, n := range []string{"a", "b"} {
		f.start(n)
	}
	f.await("2 members settle", s.o.ttl+s.o.slack, f.settled)
	f.stop("a", true)
	took := f.await("a's partitions re-owned after its lease expired", s.o.ttl+s.o.slack, f.settled)
	t.Logf("crash: partitions re-owned in %s (TTL %s)", took, s.o.ttl)
	f.stopAll()
	f.checkTokens()
	if len(f.tokens) != f.cfg.Partitions {
		t.Errorf("%d partitions ran; want %d", len(f.tokens), f.cfg.Partitions)
	}
}
