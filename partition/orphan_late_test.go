package partition_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/termcheck"
	"github.com/tenure-dev/tenure/memory"
	"github.com/tenure-dev/tenure/partition"
)

// lateLink is a member's link to the memory coordinator, as etcd can be to
// a member whose requests another etcd member forwards late: while on, a
// quarter of its claims and of its releases fail at once and are applied
// later (up to 2s), a few releases are applied and answered with an error,
// and a quarter of its table reads return the table as an earlier read saw
// it (up to a few steps old). Each link is its own coordinator value, so
// that two Groups of one identity on two links are two processes.
type lateLink struct {
	*memory.Coordinator
	on bool // guarded by mu
	mu sync.Mutex
	// rng draws the faults; stale is the table as the last fresh read saw it.
	rng   *rand.Rand
	stale []tenure.Grant
	late  int // calls applied after their error
}

var errLate = errors.New("lateLink: no reply (applied later)")

func newLateLink(c *memory.Coordinator, seed uint64) *lateLink {
	return &lateLink{Coordinator: c, on: true, rng: rand.New(rand.NewPCG(seed, 7))}
}

// draw reports whether a fault with chance 1/n hits now, and a delay.
func (l *lateLink) draw(n int) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	hit := l.on && l.rng.IntN(n) == 0
	if hit {
		l.late++
	}
	return hit, time.Duration(l.rng.IntN(2000)) * time.Millisecond
}

func (l *lateLink) setOn(on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.on = on
}

func (l *lateLink) ClaimPartitions(ctx context.Context, m partition.Member, names []string) ([]partition.ClaimResult, error) {
	if hit, d := l.draw(4); hit {
		names = append([]string(nil), names...)
		time.AfterFunc(d, func() { _, _ = l.Coordinator.ClaimPartitions(context.Background(), m, names) })
		return nil, errLate
	}
	return l.Coordinator.ClaimPartitions(ctx, m, names)
}

func (l *lateLink) ReleasePartitions(ctx context.Context, m partition.Member, gs []tenure.Grant) error {
	if hit, d := l.draw(4); hit {
		gs = append([]tenure.Grant(nil), gs...)
		time.AfterFunc(d, func() { _ = l.Coordinator.ReleasePartitions(context.Background(), m, gs) })
		return errLate
	}
	err := l.Coordinator.ReleasePartitions(ctx, m, gs)
	if hit, _ := l.draw(8); hit && err == nil {
		return errLate // applied; the reply lost
	}
	return err
}

func (l *lateLink) GroupPartitions(ctx context.Context, group string) ([]tenure.Grant, error) {
	if hit, _ := l.draw(4); hit {
		l.mu.Lock()
		stale := append([]tenure.Grant(nil), l.stale...)
		l.mu.Unlock()
		if len(stale) > 0 {
			return stale, nil
		}
	}
	gs, err := l.Coordinator.GroupPartitions(ctx, group)
	if err == nil {
		l.mu.Lock()
		l.stale = append([]tenure.Grant(nil), gs...)
		l.mu.Unlock()
	}
	return gs, err
}

// termOracle is a partition function that acts every 5ms while its
// term's Check passes, and goes on acting for up to 300ms after its
// context ends (a function slow to stop, during a hand-over). termcheck
// judges every act against every other term of the partition, whichever
// process, identity or membership runs it, and the tokens run; termOracle
// adds that the memory coordinator must have the partition owned by the
// term's holder.
type termOracle struct {
	coord *memory.Coordinator
	key   string
	log   *termcheck.Log
	mu    sync.Mutex
	rng   *rand.Rand
	bad   []string
}

func newTermOracle(coord *memory.Coordinator, key string) *termOracle {
	return &termOracle{coord: coord, key: key, log: termcheck.New(), rng: rand.New(rand.NewPCG(3, 4))}
}

func (o *termOracle) fn(ctx context.Context, p partition.Partition, t *tenure.Term) error {
	holder := t.Grant().Holder
	defer o.log.Run(p.Key, holder, t)()
	o.mu.Lock()
	linger := time.Duration(o.rng.IntN(300)) * time.Millisecond
	o.mu.Unlock()
	var stopAt time.Time
	for {
		if ctx.Err() != nil {
			if stopAt.IsZero() {
				stopAt = time.Now().Add(linger)
			}
			if !time.Now().Before(stopAt) {
				return nil
			}
		}
		if !o.log.Act(p.Key, holder, t) {
			return nil
		}
		o.owned(p, t)
		time.Sleep(5 * time.Millisecond)
	}
}

// owned checks, at an act of t on p, that the coordinator has p owned by
// t's holder.
func (o *termOracle) owned(p partition.Partition, t *tenure.Term) {
	gs, err := o.coord.GroupPartitions(context.Background(), o.key)
	owner := ""
	for _, g := range gs {
		if g.Key == p.Key {
			owner = g.Holder
		}
	}
	if err != nil || owner != t.Grant().Holder {
		o.mu.Lock()
		defer o.mu.Unlock()
		o.bad = append(o.bad, fmt.Sprintf("%s acted on %s (token %d) while the coordinator had it owned by %q (err %v)", t.Grant().Holder, p.Key, t.Token(), owner, err))
	}
}

func (o *termOracle) report(t *testing.T) {
	t.Helper()
	o.log.Verify(t)
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, s := range o.bad {
		if i == 5 {
			t.Errorf("… and %d more", len(o.bad)-5)
			break
		}
		t.Error(s)
	}
}

// TestOrphanLateCallsAndTwin tries to make the release of
// orphans (partitions the table lists as a member's, that it does not run)
// free a partition that some process runs, or make a token run twice:
// members a and b share 6 partitions; a's claims and releases are applied
// late (after an error) and its table reads are often stale; a second
// process of a's identity (same Holder and Instance, a membership of its
// own) comes and goes on a link just as faulty, while a's first process
// still lives; c comes and goes; late claims are made for random live
// memberships on random and just-freed partitions; functions go on acting
// for up to 300ms after their context ends. Every act is judged by
// termOracle. Once the faults stop, every partition must be run again and
// orphans must have been released.
func TestOrphanLateCallsAndTwin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 6)
		defer c.close()
		var logs lockedBuffer
		c.cfg.RenewInterval, c.cfg.RetryPeriod, c.cfg.Debounce = 300*time.Millisecond, 100*time.Millisecond, 2*time.Second
		c.cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
		o := newTermOracle(c.coord, c.cfg.Key)
		c.fn = o.fn
		la := newLateLink(c.coord, 1)
		c.wrap = map[string]partition.Coordinator{"a": la}
		c.start("a")
		c.start("b")
		c.await("a and b settle", 10*time.Second, c.settled)
		links := []*lateLink{la}
		startTwin := func(i int) {
			l := newLateLink(c.coord, uint64(10+i))
			links = append(links, l)
			cfg := c.cfg
			cfg.Holder = "a"
			g, err := partition.New(l, cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			n := &node{g: g, cancel: cancel, done: make(chan error, 1)}
			go func() { n.done <- g.Run(ctx, o.fn) }()
			c.nodes["a-twin"] = n
		}
		names := c.cfg.PartitionNames()
		rng := rand.New(rand.NewPCG(5, 6))
		for i := range 200 {
			if i%10 == 0 {
				if _, ok := c.nodes["c"]; ok {
					c.stop("c")
				} else {
					c.start("c")
				}
			}
			if i%25 == 5 {
				if _, ok := c.nodes["a-twin"]; ok {
					c.stop("a-twin")
				} else {
					startTwin(i)
				}
			}
			ms, err := c.coord.GroupMembers(context.Background(), c.cfg.Key)
			if err != nil || len(ms) == 0 {
				t.Fatalf("GroupMembers = %v, %v", ms, err)
			}
			m := ms[rng.IntN(len(ms))]
			pick := []string{names[rng.IntN(len(names))]}
			if free := freeNow(t, c); len(free) > 0 {
				pick = append(pick, free[rng.IntN(len(free))])
			}
			if _, err := c.coord.ClaimPartitions(context.Background(), m, pick); err != nil {
				t.Fatalf("late claim of %v for %s = %v", pick, m, err)
			}
			time.Sleep(time.Duration(50+rng.IntN(400)) * time.Millisecond)
		}
		if _, ok := c.nodes["a-twin"]; ok {
			c.stop("a-twin")
		}
		late := 0
		for _, l := range links {
			l.setOn(false)
			l.mu.Lock()
			late += l.late
			l.mu.Unlock()
		}
		time.Sleep(2 * time.Second) // the last late calls land
		c.await("every partition run again after the faults", 60*time.Second, c.settled)
		c.close()
		o.report(t)
		released := 0
		for _, w := range logs.warnings() {
			if strings.Contains(w, "releasing partitions owned but not run") {
				released++
			}
		}
		if released == 0 {
			t.Error("no member released an orphan: the test did not exercise freeOrphans")
		}
		t.Logf("%d acts judged, %d faulty calls, %d orphan releases logged", o.log.Acts(), late, released)
	})
}
