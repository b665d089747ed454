package memory

import (
	"context"
	"fmt"

	"github.com/tenure-dev/tenure"
)

// watcher is one Watch stream.
type watcher struct {
	ch     chan tenure.LeaderEvent // 1-buffered: holds the latest unread event
	stop   func() bool             // stops the context.AfterFunc cleanup
	closed bool
}

// send replaces any unread event with ev; it never blocks. Only the
// coordinator sends, under its lock, so after draining the buffer the send
// cannot fail.
func (w *watcher) send(ev tenure.LeaderEvent) {
	select {
	case w.ch <- ev:
		return
	default:
	}
	select {
	case <-w.ch:
	default:
	}
	w.ch <- ev
}

// Watch sends key's current leadership at once, then every change: an
// acquire, a release, and an expiry the moment it happens on the
// coordinator's clock. Events are coalesced: a slow reader sees the latest
// state, not every change. The channel is closed when ctx ends, when the
// coordinator restarts (as a watch stream breaks when its server dies) and
// when it closes. Watch has no holder: it is an observer and never faulted.
func (c *Coordinator) Watch(ctx context.Context, key string) (<-chan tenure.LeaderEvent, error) {
	if err := tenure.ValidateKey(key); err != nil {
		return nil, fmt.Errorf("memory: watch: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory: watch %q: %w", key, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, fmt.Errorf("memory: watch %q: %w", key, tenure.ErrClosed)
	}
	ks := c.keyLocked(key)
	c.liveLocked(ks, c.clock.now()) // collect an expired lease before reporting
	w := &watcher{ch: make(chan tenure.LeaderEvent, 1)}
	w.ch <- eventOf(ks)
	ks.watchers[w] = struct{}{}
	c.inflight.Add(1)
	w.stop = context.AfterFunc(ctx, func() {
		defer c.inflight.Done()
		c.mu.Lock()
		defer c.mu.Unlock()
		closeWatcher(ks, w)
	})
	return w.ch, nil
}

// eventOf is the current leadership of ks; its lease, if any, is live.
func eventOf(ks *keyState) tenure.LeaderEvent {
	if ks.lease == nil {
		return tenure.LeaderEvent{Key: ks.key}
	}
	return tenure.LeaderEvent{Key: ks.key, Held: true, Grant: ks.lease.grant(ks.key)}
}

// notifyLocked tells the watchers of ks its current leadership.
func (c *Coordinator) notifyLocked(ks *keyState) {
	if len(ks.watchers) == 0 {
		return
	}
	ev := eventOf(ks)
	for w := range ks.watchers {
		w.send(ev)
	}
}

// closeWatcher closes w's channel and forgets it. The caller holds the lock.
func closeWatcher(ks *keyState, w *watcher) {
	if w.closed {
		return
	}
	w.closed = true
	close(w.ch)
	delete(ks.watchers, w)
}

// closeWatchersLocked closes every watch channel and stops their context
// cleanups.
func (c *Coordinator) closeWatchersLocked() {
	for _, ks := range c.keys {
		for w := range ks.watchers {
			closeWatcher(ks, w)
			if w.stop() {
				c.inflight.Done()
			}
		}
	}
}
