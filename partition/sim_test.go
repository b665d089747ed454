package partition_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/boottime"
	"github.com/tenure-dev/tenure/internal/history"
	"github.com/tenure-dev/tenure/memory"
	"github.com/tenure-dev/tenure/partition"
)

// recorder records the terms of every member in the history format of
// tenure verify (package history), so that its checkers judge each
// partition: times are nanoseconds on the bubble's clock since origin.
type recorder struct {
	origin time.Time
	mu     sync.Mutex
	events []history.Event
	terms  []termSpan
	wg     sync.WaitGroup // term-end AfterFuncs not yet run
}

// termSpan is one term a partition function got, from the call until its
// context ended, on the boot clock (which a simulated suspend moves).
type termSpan struct {
	term       *tenure.Term
	start, end boottime.Instant
}

func newRecorder() *recorder { return &recorder{origin: time.Now()} }

func (r *recorder) add(ev history.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev.At = int64(time.Since(r.origin))
	r.events = append(r.events, ev)
}

// fn is a partition function that records its term, from the call until
// the term's context ends, and works until its context ends.
func (r *recorder) fn(ctx context.Context, p partition.Partition, t *tenure.Term) error {
	r.add(history.Event{Holder: t.Grant().Holder, Kind: history.KindElected, Token: t.Token(), Partition: p.Name})
	start := boottime.Now()
	r.wg.Add(1)
	context.AfterFunc(t.Context(), func() {
		defer r.wg.Done()
		r.add(history.Event{Holder: t.Grant().Holder, Kind: history.KindEnd, Token: t.Token(), Partition: p.Name})
		r.mu.Lock()
		r.terms = append(r.terms, termSpan{term: t, start: start, end: boottime.Now()})
		r.mu.Unlock()
	})
	<-ctx.Done()
	return nil
}

// spans returns the recorded terms of holder, once every term has ended.
func (r *recorder) spans(holder string) []termSpan {
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []termSpan
	for _, s := range r.terms {
		if s.term.Grant().Holder == holder {
			out = append(out, s)
		}
	}
	return out
}

// verdict is what the checkers found over every partition: each check's
// count is the sum over the partitions, its details name the partition.
type verdict struct {
	overlap, order history.Check
	terms          int // terms recorded, in all partitions
}

func (v verdict) checks() []history.Check { return []history.Check{v.overlap, v.order} }

// analyze runs the checkers of terms over the recorded terms of a group of
// p partitions, once every term has ended: each partition is judged on its
// own (no two owners' terms overlap, tokens only increase).
func (r *recorder) analyze(p int) verdict {
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	var v verdict
	for _, name := range partition.Names(p) {
		h := &history.History{Finish: int64(time.Since(r.origin))}
		for _, ev := range r.events {
			if ev.Partition == name {
				h.Events = append(h.Events, ev)
			}
		}
		spans := history.Spans(h)
		v.terms += len(spans)
		overlap, _ := history.CheckOverlap(h, spans)
		order := history.CheckTokenOrder(h, spans)
		for _, m := range []struct{ sum, c *history.Check }{{&v.overlap, &overlap}, {&v.order, &order}} {
			m.sum.Name = m.c.Name
			m.sum.Count += m.c.Count
			for _, d := range m.c.Details {
				m.sum.Details = append(m.sum.Details, "partition "+name+": "+d)
			}
		}
	}
	return v
}

// cluster runs members of one group on a memory coordinator, inside a
// testing/synctest bubble.
type cluster struct {
	t       *testing.T
	coord   *memory.Coordinator
	suspend func(time.Duration) // moves the boot clock alone: a host suspend
	cfg     partition.Config
	rec     *recorder
	nodes   map[string]*node
	wrap    map[string]partition.Coordinator // a member's coordinator, when not coord
	fn      partition.Func                   // the members' function, when not rec.fn
	// incarnation is each member's last Instance started by startNew.
	incarnation map[string]int
}

type node struct {
	g      *partition.Group
	cancel context.CancelFunc
	done   chan error
}

var dbgLogger *slog.Logger

// newCluster returns a cluster of a group of p partitions; call it inside
// the bubble.
//
// The boot clock follows the bubble's time until the test ends (see
// boottime.NewSuspendable), as it follows Go's clock on a host: read for
// real, it runs ahead of the bubble by the real time the bubble computes,
// which a loaded machine stretches beyond a TTL (3000 partitions under
// -race at load 20), so the members' terms took it for a suspend and ended.
// c.suspend moves it forward alone.
func newCluster(t *testing.T, p int) *cluster {
	clk, suspend := boottime.NewSuspendable()
	t.Cleanup(boottime.Simulate(clk))
	cfg := partition.DefaultConfig()
	cfg.Key = "jobs"
	cfg.Partitions = p
	cfg.TTL = 3 * time.Second
	cfg.Margin = 300 * time.Millisecond
	cfg.Instance = "1"
	cfg.Logger = dbgLogger
	return &cluster{t: t, coord: memory.New(), suspend: suspend, cfg: cfg, rec: newRecorder(), nodes: map[string]*node{}}
}

// startNew runs member name as a new process: its Instance one more than
// its last startNew's (after c.incarnation[name]--, the same process
// again, its last membership perhaps still live).
func (c *cluster) startNew(name string) {
	if c.incarnation == nil {
		c.incarnation = map[string]int{}
	}
	c.incarnation[name]++
	c.cfg.Instance = fmt.Sprint(c.incarnation[name])
	c.start(name)
}

// start runs member name.
func (c *cluster) start(name string) {
	cfg := c.cfg
	cfg.Holder = name
	var coord partition.Coordinator = c.coord
	if w, ok := c.wrap[name]; ok {
		coord = w
	}
	g, err := partition.New(coord, cfg)
	if err != nil {
		c.t.Fatalf("partition.New(%s) error = %v", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &node{g: g, cancel: cancel, done: make(chan error, 1)}
	fn := c.fn
	if fn == nil {
		fn = c.rec.fn
	}
	go func() { n.done <- g.Run(ctx, fn) }()
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

// check stops the cluster and runs the checkers on every term
// recorded, per partition.
func (c *cluster) check() {
	c.t.Helper()
	c.close()
	for _, chk := range c.rec.analyze(c.cfg.Partitions).checks() {
		for _, msg := range chk.Details {
			c.t.Errorf("%s: %s", chk.Name, msg)
		}
		if chk.Count > len(chk.Details) {
			c.t.Errorf("%s: … and %d more", chk.Name, chk.Count-len(chk.Details))
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
