package partition_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/memory"
	"github.com/tenure-dev/tenure/partition"
)

// partitionSpan is one term of one partition as its function saw it: from
// the call until the term's context was cancelled.
type partitionSpan struct {
	key        string
	holder     string
	token      uint64
	start, end time.Time
}

// recorder collects the spans of every member's terms.
type recorder struct {
	mu    sync.Mutex
	spans []*partitionSpan
	wg    sync.WaitGroup // span-end AfterFuncs not yet run
}

// fn is a partition function that records its term's span and works until
// its context ends.
func (r *recorder) fn(ctx context.Context, p partition.Partition, t *tenure.Term) error {
	s := &partitionSpan{key: p.Key, holder: t.Holder(), token: t.Token(), start: time.Now()}
	r.mu.Lock()
	r.spans = append(r.spans, s)
	r.mu.Unlock()
	r.wg.Add(1)
	context.AfterFunc(t.Context(), func() {
		defer r.wg.Done()
		r.mu.Lock()
		s.end = time.Now()
		r.mu.Unlock()
	})
	<-ctx.Done()
	return nil
}

// byKey groups the spans by partition key.
func (r *recorder) byKey() map[string][]*partitionSpan {
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]*partitionSpan{}
	for _, s := range r.spans {
		out[s.key] = append(out[s.key], s)
	}
	return out
}

// partitionOverlaps returns, for one partition's spans, every pair of
// different terms whose spans overlap (two owners acting at once).
func partitionOverlaps(spans []*partitionSpan) []string {
	s := slices.Clone(spans)
	slices.SortFunc(s, func(a, b *partitionSpan) int { return a.start.Compare(b.start) })
	var out []string
	for i, a := range s {
		for _, b := range s[i+1:] {
			if !b.start.Before(a.end) {
				break
			}
			if a.token != b.token {
				out = append(out, fmt.Sprintf("%s: %s (token %d) until %s and %s (token %d) from %s overlap",
					a.key, a.holder, a.token, a.end.Format(time.StampMilli), b.holder, b.token, b.start.Format(time.StampMilli)))
			}
		}
	}
	return out
}

// partitionTokenOrder returns every term of one partition whose token is not
// greater than that of the term that started before it.
func partitionTokenOrder(spans []*partitionSpan) []string {
	s := slices.Clone(spans)
	slices.SortStableFunc(s, func(a, b *partitionSpan) int { return a.start.Compare(b.start) })
	var out []string
	for i := 1; i < len(s); i++ {
		if s[i].token <= s[i-1].token {
			out = append(out, fmt.Sprintf("%s: token %d (%s) started after token %d (%s)", s[i].key, s[i].token, s[i].holder, s[i-1].token, s[i-1].holder))
		}
	}
	return out
}

// cluster runs members of one group on a memory coordinator.
type cluster struct {
	t     *testing.T
	coord *memory.Coordinator
	cfg   partition.Config
	rec   *recorder
	nodes map[string]*node
	wrap  map[string]tenure.Coordinator // a member's coordinator, when not coord
}

type node struct {
	g      *partition.Group
	cancel context.CancelFunc
	done   chan error
}

var dbgLogger *slog.Logger

func newCluster(t *testing.T, p int) *cluster {
	cfg := partition.DefaultConfig()
	cfg.Key = "jobs"
	cfg.Partitions = p
	cfg.TTL = 3 * time.Second
	cfg.Margin = 300 * time.Millisecond
	cfg.Instance = "1"
	cfg.Logger = dbgLogger
	return &cluster{t: t, coord: memory.New(), cfg: cfg, rec: &recorder{}, nodes: map[string]*node{}}
}

// start runs member name.
func (c *cluster) start(name string) {
	cfg := c.cfg
	cfg.Holder = name
	var coord tenure.Coordinator = c.coord
	if w, ok := c.wrap[name]; ok {
		coord = w
	}
	g, err := partition.New(coord, cfg)
	if err != nil {
		c.t.Fatalf("partition.New(%s) error = %v", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &node{g: g, cancel: cancel, done: make(chan error, 1)}
	go func() { n.done <- g.Run(ctx, c.rec.fn) }()
	c.nodes[name] = n
}

// stop cancels member name's Run and waits for it.
func (c *cluster) stop(name string) {
	n := c.nodes[name]
	n.cancel()
	if err := <-n.done; !errors.Is(err, context.Canceled) {
		c.t.Errorf("Run(%s) = %v; want context.Canceled", name, err)
	}
	delete(c.nodes, name)
}

// close stops every member and the coordinator. It is idempotent.
func (c *cluster) close() {
	for name := range c.nodes {
		c.stop(name)
	}
	c.coord.Close()
}

// owners returns who runs each partition key, by the members' snapshots,
// and fails on a partition run by two members.
func (c *cluster) owners() map[string]string {
	out := map[string]string{}
	for name, n := range c.nodes {
		for _, o := range n.g.Snapshot().Owned {
			if prev, dup := out[o.Partition.Key]; dup {
				c.t.Errorf("partition %s is run by %s and %s", o.Partition.Key, prev, name)
			}
			out[o.Partition.Key] = name
		}
	}
	return out
}

// settled reports whether every partition is run and no member runs more
// than ⌈P/N⌉.
func (c *cluster) settled() bool {
	own := c.owners()
	if len(own) != c.cfg.Partitions {
		return false
	}
	limit := (c.cfg.Partitions + len(c.nodes) - 1) / len(c.nodes)
	load := map[string]int{}
	for _, m := range own {
		load[m]++
		if load[m] > limit {
			return false
		}
	}
	return true
}

// within advances virtual time in steps of 50ms until cond holds, and
// reports false if it does not within limit.
func (c *cluster) within(limit time.Duration, cond func() bool) bool {
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// await advances virtual time in steps of 50ms until cond holds, and fails
// after limit.
func (c *cluster) await(what string, limit time.Duration, cond func() bool) time.Duration {
	c.t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			c.t.Fatalf("%s: not after %s; owners %v", what, limit, c.owners())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(start)
}

// check stops the cluster and runs the per-partition checkers on every span
// recorded.
func (c *cluster) check() {
	c.t.Helper()
	c.close()
	for _, spans := range c.rec.byKey() {
		for _, msg := range partitionOverlaps(spans) {
			c.t.Error(msg)
		}
		for _, msg := range partitionTokenOrder(spans) {
			c.t.Error(msg)
		}
	}
}

// dump logs every member's snapshot and the coordinator's table.
func (c *cluster) dump() {
	for name, n := range c.nodes {
		s := n.g.Snapshot()
		c.t.Logf("member %s: joined %v epoch %d deadline in %s, members %v, owns %d", name, s.Joined, s.Member.Epoch, time.Until(s.Deadline), s.Members, len(s.Owned))
	}
	tab, err := partition.ReadTable(context.Background(), c.coord, c.cfg.Key, c.cfg.PartitionNames())
	if err != nil {
		c.t.Logf("ReadTable: %v", err)
		return
	}
	for _, r := range tab.Partitions {
		c.t.Logf("%s: %q token %d lease left %s", r.Partition.Key, r.Owner, r.Token, r.LeaseLeft)
	}
}

func TestPartitionCheckers(t *testing.T) {
	at := func(s float64) time.Time { return time.Unix(1000, 0).Add(time.Duration(s * float64(time.Second))) }
	span := func(holder string, token uint64, from, to float64) *partitionSpan {
		return &partitionSpan{key: "jobs/1", holder: holder, token: token, start: at(from), end: at(to)}
	}
	for _, tc := range []struct {
		name             string
		spans            []*partitionSpan
		overlaps, orders int
	}{
		{"one after another", []*partitionSpan{span("a", 1, 0, 1), span("b", 2, 1, 2), span("a", 3, 3, 4)}, 0, 0},
		{"overlap", []*partitionSpan{span("a", 1, 0, 2), span("b", 2, 1, 3)}, 1, 0},
		{"token went down", []*partitionSpan{span("a", 5, 0, 1), span("b", 4, 2, 3)}, 0, 1},
		{"token repeated", []*partitionSpan{span("a", 5, 0, 1), span("a", 5, 2, 3)}, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := partitionOverlaps(tc.spans); len(got) != tc.overlaps {
				t.Errorf("partitionOverlaps() = %q; want %d findings", got, tc.overlaps)
			}
			if got := partitionTokenOrder(tc.spans); len(got) != tc.orders {
				t.Errorf("partitionTokenOrder() = %q; want %d findings", got, tc.orders)
			}
		})
	}
}
