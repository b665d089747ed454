package kube

import (
	"context"
	"fmt"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/tenure-dev/tenure"
)

// Watch sends key's current leadership, then every change: a new grant
// (Held, with the time left as TTL), and the Lease's release, deletion or
// expiry (not Held). It watches the one Lease (a field selector on its
// name), so a follower hears of a release one event after the write. The
// API server never expires a Lease: the watch does, on this coordinator's
// clock, by the same rule as Acquire (see the package documentation), so
// the "free" event of an expiry comes when Acquire would grant the key.
// See tenure.Coordinator.
//
// Events are coalesced: a reader that falls behind receives the latest
// state, not every change; renewals, which change nothing a reader sees,
// send nothing. A watch the API server ends (its request timeout, or a
// resourceVersion too old to resume from) is opened again from a fresh
// read; while the server cannot be reached the watch retries, and the
// last state stands (an expiry it times then is a hint: the Acquire it
// prompts reads the Lease). The channel is closed when ctx ends, when the
// coordinator is closed, or when the Lease turns out to hold another key
// (ErrNameClash).
func (c *Coordinator) Watch(ctx context.Context, key string) (<-chan tenure.LeaderEvent, error) {
	op := fmt.Sprintf("kube: watch %q", key)
	if err := validateKey(key); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if err := c.begin(ctx, op); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.ctx, cancel) // Close ends the watch
	w := &watcher{c: c, key: key, name: LeaseName(key)}
	first, stream, err := w.open(wctx)
	if err != nil {
		stop()
		cancel()
		return nil, fail(wctx, op, err)
	}
	out := make(chan tenure.LeaderEvent, 1)
	c.mu.Lock()
	if c.closed { // Close has begun and may be waiting: do not add to wg
		c.mu.Unlock()
		stream.Stop()
		stop()
		cancel()
		return nil, fmt.Errorf("%s: %w", op, tenure.ErrClosed)
	}
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		defer close(out)
		defer stop()
		defer cancel()
		w.run(wctx, first, stream, out)
	}()
	return out, nil
}

// A watcher follows one Lease for Watch.
type watcher struct {
	c    *Coordinator
	key  string
	name string
}

// A state is what the watcher knows of the Lease: found is false when it
// does not exist.
type state struct {
	r     record
	found bool
}

// open reads the Lease (a list of the one name, for the resourceVersion to
// watch from, which exists even when the Lease does not) and opens a watch
// from there.
func (w *watcher) open(ctx context.Context) (state, watch.Interface, error) {
	sel := fields.OneTermEqualSelector("metadata.name", w.name).String()
	list, err := w.c.leases.List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return state{}, nil, err
	}
	at := tenure.Now()
	var s state
	if len(list.Items) > 0 {
		if s, err = w.observe(&list.Items[0], at); err != nil {
			return state{}, nil, err
		}
	} else {
		w.c.unsee(w.name)
	}
	stream, err := w.c.leases.Watch(ctx, metav1.ListOptions{FieldSelector: sel,
		ResourceVersion: list.ResourceVersion, AllowWatchBookmarks: true})
	if err != nil {
		return state{}, nil, err
	}
	return s, stream, nil
}

// observe records Lease l, seen at `at`, and returns the state it shows.
func (w *watcher) observe(l *coordv1.Lease, at tenure.Instant) (state, error) {
	if err := checkKey(l, w.key); err != nil {
		return state{}, err
	}
	r, err := w.c.sight(l, at)
	return state{r: r, found: true}, err
}

// event is what a reader is told of s.
func (w *watcher) event(s state) tenure.LeaderEvent {
	md := w.c.cfg.MaxDrift
	if !s.found || !s.r.live(md) {
		return tenure.LeaderEvent{Key: w.key}
	}
	return tenure.LeaderEvent{Key: w.key, Held: true, Grant: s.r.grant(w.key, md)}
}

// same reports whether a and b tell a reader the same thing.
func same(a, b tenure.LeaderEvent) bool {
	return a.Held == b.Held && a.Grant.Holder == b.Grant.Holder && a.Grant.Token == b.Grant.Token
}

// Bounds of the backoff between attempts to open a watch again.
const (
	minReopen = 100 * time.Millisecond
	maxReopen = 2 * time.Second
)

// run follows the Lease from s until ctx ends, sending events on out. When
// the server ends the watch, it opens it again from a fresh read, retrying
// with backoff while the server is unreachable.
func (w *watcher) run(ctx context.Context, s state, stream watch.Interface, out chan<- tenure.LeaderEvent) {
	f := &follow{s: s, stream: stream, reopen: time.NewTimer(0), backoff: minReopen}
	f.reopen.Stop()
	defer f.stop()
	last, pending := w.event(s), true
	expiry := time.NewTimer(0)
	defer expiry.Stop()
	for {
		if f.s.found && f.s.r.live(w.c.cfg.MaxDrift) {
			expiry.Reset(f.s.r.left(w.c.cfg.MaxDrift))
		}
		var send chan<- tenure.LeaderEvent
		if pending {
			send = out
		}
		select {
		case <-ctx.Done():
			return
		case send <- last:
			pending = false
			continue
		case <-expiry.C: // the lease may have expired: re-evaluate below
		case <-f.reopen.C:
			if !w.reopen(ctx, f) {
				continue
			}
		case ev, open := <-f.results():
			if !open || ev.Type == watch.Error {
				w.drop(f, ev, open)
				continue
			}
			var err error
			if f.s, err = w.apply(f.s, ev); err != nil {
				w.c.log.Info("watch stopped", "key", w.key, "err", err)
				return
			}
		}
		if e := w.event(f.s); !same(e, last) {
			last, pending = e, true
		}
	}
}

// A follow is what watcher.run keeps between events: the Lease as last
// seen, the watch stream that moves it (nil while it is opened again), and
// the timer and backoff of the next attempt to open it.
type follow struct {
	s       state
	stream  watch.Interface
	reopen  *time.Timer
	backoff time.Duration
}

// results is the stream's channel of events, or nil while there is no
// stream.
func (f *follow) results() <-chan watch.Event {
	if f.stream == nil {
		return nil
	}
	return f.stream.ResultChan()
}

// stop stops the stream and the reopen timer.
func (f *follow) stop() {
	if f.stream != nil {
		f.stream.Stop()
	}
	f.reopen.Stop()
}

// drop stops f's stream, which the server ended (open false) or which sent
// an error event ev, and opens it again at once.
func (w *watcher) drop(f *follow, ev watch.Event, open bool) {
	if open {
		w.c.log.Debug("watch: error event", "key", w.key, "err", apierrors.FromObject(ev.Object))
	}
	f.stream.Stop()
	f.stream = nil
	f.reopen.Reset(0)
}

// reopen opens the watch again from a fresh read and reports whether it
// did; when it did not, it tries again after a backoff that doubles up to
// maxReopen.
func (w *watcher) reopen(ctx context.Context, f *follow) bool {
	s, stream, err := w.open(ctx)
	if err != nil {
		w.c.log.Debug("watch: open again", "key", w.key, "err", err, "retry in", f.backoff)
		f.reopen.Reset(f.backoff)
		f.backoff = min(2*f.backoff, maxReopen)
		return false
	}
	f.s, f.stream, f.backoff = s, stream, minReopen
	return true
}

// apply applies one watch event to s and returns the new state.
func (w *watcher) apply(s state, ev watch.Event) (state, error) {
	at := tenure.Now()
	switch ev.Type {
	case watch.Added, watch.Modified:
		if l, ok := ev.Object.(*coordv1.Lease); ok {
			return w.observe(l, at)
		}
	case watch.Deleted:
		w.c.unsee(w.name)
		return state{}, nil
	}
	return s, nil // a bookmark
}
