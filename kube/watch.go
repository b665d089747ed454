package kube

import (
	"context"
	"fmt"
	"net/http"
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
// See tenure.Watcher.
//
// Events are coalesced: a reader that falls behind receives the latest
// state, not every change; renewals, which change nothing a reader sees,
// send nothing. A watch the API server ends (its request timeout, or a
// resourceVersion too old to resume from) is opened again from a fresh
// read. The channel is closed when ctx ends, when the coordinator is
// closed, or when opening the watch again fails.
func (c *Coordinator) Watch(ctx context.Context, key string) (<-chan tenure.LeaderEvent, error) {
	op := fmt.Sprintf("kube: watch %q", key)
	if err := tenure.ValidateKey(key); err != nil {
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

// run follows the Lease from s until ctx ends or the watch cannot be
// opened again, sending events on out.
func (w *watcher) run(ctx context.Context, s state, stream watch.Interface, out chan<- tenure.LeaderEvent) {
	defer func() { stream.Stop() }()
	last := w.event(s)
	pending := &last
	expiry := time.NewTimer(0)
	defer expiry.Stop()
	arm := func() { expiry.Reset(max(s.r.left(w.c.cfg.MaxDrift), 0)) }
	arm()
	for {
		var send chan<- tenure.LeaderEvent
		if pending != nil {
			send = out
		}
		var ok bool
		select {
		case <-ctx.Done():
			return
		case send <- last:
			pending = nil
			continue
		case <-expiry.C: // the lease may have expired: re-evaluate below
		case ev, open := <-stream.ResultChan():
			if s, ok = w.apply(ctx, s, ev, open, &stream); !ok {
				return
			}
		}
		if e := w.event(s); !same(e, last) {
			last, pending = e, &e
		}
		if s.found && s.r.holder != "" && s.r.live(w.c.cfg.MaxDrift) {
			arm()
		}
	}
}

// apply applies one watch event (open is false when the server ended the
// watch) to s, and returns the new state; ok is false when the watch must
// end. It reopens the watch into *stream when the server ended it.
func (w *watcher) apply(ctx context.Context, s state, ev watch.Event, open bool, stream *watch.Interface) (state, bool) {
	at := tenure.Now()
	switch {
	case !open, ev.Type == watch.Error && gone(ev):
		(*stream).Stop()
		ns, st, err := w.open(ctx)
		if err != nil {
			if ctx.Err() == nil {
				w.c.log.Info("watch ended and could not be opened again", "key", w.key, "err", err)
			}
			return s, false
		}
		*stream = st
		return ns, true
	case ev.Type == watch.Added, ev.Type == watch.Modified:
		l, isLease := ev.Object.(*coordv1.Lease)
		if !isLease {
			return s, true
		}
		ns, err := w.observe(l, at)
		if err != nil {
			w.c.log.Info("watch stopped", "key", w.key, "err", err)
			return s, false
		}
		return ns, true
	case ev.Type == watch.Deleted:
		w.c.unsee(w.name)
		return state{}, true
	case ev.Type == watch.Error:
		w.c.log.Info("watch failed", "key", w.key, "err", apierrors.FromObject(ev.Object))
		return s, false
	}
	return s, true // a bookmark
}

// gone reports whether a watch error event says that the resourceVersion
// it resumes from is too old (410 Gone): the watch must start over.
func gone(ev watch.Event) bool {
	st, ok := ev.Object.(*metav1.Status)
	return ok && st.Code == http.StatusGone
}
