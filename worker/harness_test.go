package worker_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/memory"
	"github.com/tenure-dev/tenure/worker"
)

// Timing of the test elector: TTL 10s, margin 1s, drift 1%, so a term's
// local deadline is 8.9s after its acquire request was sent, and it renews
// every 10s/3.
const (
	testTTL       = 10 * time.Second
	testSafeLease = 8900 * time.Millisecond
	holder        = "node-a"
)

// queue is a Source whose items stay pending until marked done.
type queue struct {
	mu      sync.Mutex
	pending []string
}

func newQueue(items ...string) *queue { return &queue{pending: items} }

func (q *queue) Fetch(ctx context.Context, max int) ([]string, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.pending[:min(max, len(q.pending))]), nil
}

func (q *queue) done(item string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pending = slices.DeleteFunc(q.pending, func(s string) bool { return s == item })
}

func (q *queue) left() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.pending)
}

// node runs an Elector on a memory coordinator whose leader function runs a
// worker. Create it inside a synctest bubble; it is stopped on cleanup.
type node struct {
	t      *testing.T
	coord  *memory.Coordinator
	e      *tenure.Elector
	trans  chan tenure.Transition
	terms  chan *tenure.Term
	runErr chan error // each worker.Run's result
	// checkAfter has term.Check() of each term right after the leader
	// function returned, before the elector acted on its result.
	checkAfter chan error
	ctx        context.Context
	cancel     context.CancelFunc

	stopOnce sync.Once
	stopErr  error
	done     chan error // Elector.Run's result
}

// startNode starts an elector whose leader function is run(ctx, term),
// typically a worker's Run. onTransition, if set, is called from the
// elector's goroutine too.
func startNode(t *testing.T, run func(context.Context, *tenure.Term) error, onTransition func(tenure.Transition)) *node {
	t.Helper()
	n := newNode(t, onTransition)
	n.start(run)
	return n
}

// newNode prepares a node without starting it, so that the functions given
// to the worker and to start may refer to it.
func newNode(t *testing.T, onTransition func(tenure.Transition)) *node {
	t.Helper()
	n := &node{
		t:          t,
		coord:      memory.New(),
		trans:      make(chan tenure.Transition, 64),
		terms:      make(chan *tenure.Term, 16),
		runErr:     make(chan error, 16),
		checkAfter: make(chan error, 16),
		done:       make(chan error, 1),
	}
	cfg := tenure.DefaultConfig()
	cfg.Key, cfg.Holder, cfg.TTL = "jobs", holder, testTTL
	cfg.OnTransition = func(tr tenure.Transition) {
		n.trans <- tr
		if onTransition != nil {
			onTransition(tr)
		}
	}
	e, err := tenure.NewElector(n.coord, cfg)
	if err != nil {
		t.Fatalf("NewElector() = %v", err)
	}
	n.e = e
	ctx, cancel := context.WithCancel(t.Context())
	n.ctx, n.cancel = ctx, cancel
	t.Cleanup(func() { n.stop() })
	return n
}

// start runs the elector with run as its leader function.
func (n *node) start(run func(context.Context, *tenure.Term) error) {
	go func() {
		n.done <- n.e.Run(n.ctx, func(ctx context.Context, term *tenure.Term) error {
			n.terms <- term
			err := run(ctx, term)
			n.checkAfter <- term.Check() // before the elector acts on err
			n.runErr <- err
			return err
		})
	}()
}

// stop cancels the elector's context, waits for Run and closes the
// coordinator. It returns Run's error. It is also called on cleanup.
func (n *node) stop() error {
	n.stopOnce.Do(func() {
		n.cancel()
		select {
		case n.stopErr = <-n.done:
		case <-time.After(waitLimit):
			n.t.Errorf("Elector.Run did not return within %s of its context ending", waitLimit)
		}
		n.coord.Close()
	})
	return n.stopErr
}

// waitLimit bounds, in a bubble's virtual time, how long a test waits for
// something that should happen: a broken worker fails the test instead of
// hanging it.
const waitLimit = 10 * time.Minute

// next returns the next transition of kind, skipping others.
func (n *node) next(kind tenure.TransitionKind) tenure.Transition {
	n.t.Helper()
	limit := time.After(waitLimit)
	for {
		select {
		case tr := <-n.trans:
			if tr.Kind == kind {
				return tr
			}
		case <-limit:
			n.t.Fatalf("no %s transition within %s", kind, waitLimit)
		}
	}
}

// result returns the next worker.Run result.
func (n *node) result() error {
	n.t.Helper()
	select {
	case err := <-n.runErr:
		return err
	case <-time.After(waitLimit):
		n.t.Fatalf("the worker did not return within %s", waitLimit)
		return nil
	}
}

// checked returns term.Check() of the next term whose worker returned, as
// it was right after the worker returned.
func (n *node) checked() error {
	n.t.Helper()
	select {
	case err := <-n.checkAfter:
		return err
	case <-time.After(waitLimit):
		n.t.Fatalf("the worker did not return within %s", waitLimit)
		return nil
	}
}

// record is one processed item.
type record struct {
	item     string
	token    uint64
	start    time.Time
	deadline time.Time // the term's local deadline when the item started
	ctxErr   error     // the item's context's error when it finished
}

// recorder records processing.
type recorder struct {
	mu      sync.Mutex
	records []record
}

func (r *recorder) add(rec record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec)
}

func (r *recorder) all() []record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.records)
}

func (r *recorder) items() []string {
	var out []string
	for _, rec := range r.all() {
		out = append(out, rec.item)
	}
	return out
}

func newWorker(t *testing.T, src worker.Source[string], proc worker.Processor[string], opts ...worker.Option) *worker.Worker[string] {
	t.Helper()
	w, err := worker.New(src, proc, opts...)
	if err != nil {
		t.Fatalf("worker.New() = %v", err)
	}
	return w
}
