package bench

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/partition"
)

// fn is every member's partition function: it records the term's start and
// counts the partitions running until its context ends.
func (m *measurer) fn(ctx context.Context, p partition.Partition, t *tenure.Term) error {
	m.started.Add(1)
	m.running.Add(1)
	defer m.running.Add(-1)
	m.mu.Lock()
	m.runs[p.Key] = append(m.runs[p.Key], run{member: t.Grant().Holder, token: t.Token(), at: time.Now()})
	m.mu.Unlock()
	<-ctx.Done()
	return nil
}

// start starts member name, with a coordinator of its own and its warnings
// collected.
func (m *measurer) start(ctx context.Context, name string) error {
	n, err := m.add(ctx, name)
	if err != nil {
		return err
	}
	m.run(ctx, n)
	return nil
}

// add makes member name, with a coordinator of its own and its warnings
// collected, and does not run it yet: a cold start runs every member at
// once, as separate processes would start, each with a CPU of its own to
// connect and build its partition tables (O(P) each).
func (m *measurer) add(ctx context.Context, name string) (*measured, error) {
	c, err := m.o.NewCoordinator(ctx)
	if err != nil {
		return nil, fmt.Errorf("bench partitions: coordinator for %s: %w", name, err)
	}
	cfg := m.pcfg
	cfg.Holder, cfg.Instance = name, "1"
	cfg.Logger = slog.New(m.warnings)
	g, err := partition.New(c, cfg)
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	n := &measured{name: name, coord: c, g: g, done: make(chan error, 1)}
	m.nodes[name] = n
	return n, nil
}

// run runs member n.
func (m *measurer) run(ctx context.Context, n *measured) {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	n.cancel = cancel
	go func() { n.done <- n.g.Run(rctx, m.fn) }()
}

// stop ends member name: gracefully, or by closing its coordinator first
// (crash: it cannot renew or leave).
func (m *measurer) stop(name string, crash bool) {
	n := m.nodes[name]
	delete(m.nodes, name)
	if n.cancel == nil { // made, never run
		_ = n.coord.Close()
		return
	}
	if crash {
		_ = n.coord.Close()
	}
	n.cancel()
	<-n.done
	_ = n.coord.Close()
}

func (m *measurer) stopAll() {
	for name := range m.nodes {
		m.stop(name, false)
	}
}

// owners returns who runs each partition now, and the most one runs.
func (m *measurer) owners() (map[string]string, int) {
	out := make(map[string]string, m.o.Partitions)
	most := 0
	for name, n := range m.nodes {
		owned := n.g.Snapshot().Owned
		most = max(most, len(owned))
		for _, o := range owned {
			out[o.Partition.Key] = name
		}
	}
	return out, most
}

// warnings is a slog.Handler that counts the members' warnings and errors
// by message, keeping the last "err" (or "cause") of each, so that a run
// that fails can say what the coordinator answered.
type warnings struct {
	mu     sync.Mutex
	counts map[string]int
	last   map[string]string
	total  atomic.Int64
}

func newWarnings() *warnings {
	return &warnings{counts: map[string]int{}, last: map[string]string{}}
}

// Enabled reports whether a record of level l is counted: warnings and
// errors.
func (w *warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

// Handle counts r.
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	w.total.Add(1)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.counts[r.Message]++
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "err" || a.Key == "cause" {
			w.last[r.Message] = strings.ReplaceAll(a.Value.String(), "\n", "; ")
		}
		return true
	})
	return nil
}

// WithAttrs returns w: attributes are not kept.
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler { return w }

// WithGroup returns w.
func (w *warnings) WithGroup(string) slog.Handler { return w }

// summary lists the messages counted, the most frequent first, each with
// its count and last error: "312× claim failed (last: …)".
func (w *warnings) summary(most int) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	msgs := make([]string, 0, len(w.counts))
	for msg := range w.counts {
		msgs = append(msgs, msg)
	}
	slices.SortFunc(msgs, func(a, b string) int { return w.counts[b] - w.counts[a] })
	var out []string
	for _, msg := range msgs[:min(most, len(msgs))] {
		s := fmt.Sprintf("%d× %s", w.counts[msg], msg)
		if e := w.last[msg]; e != "" {
			s += " (last: " + e + ")"
		}
		out = append(out, s)
	}
	return out
}
