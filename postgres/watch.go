package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/outage"
)

// watchFailures is how many reads in a row a watcher may fail before it
// gives up and closes its channel.
const watchFailures = 3

// listener owns a Coordinator's dedicated LISTEN connection and fans
// notifications out, by key, to the watchers subscribed to it.
type listener struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
}

// subscribe registers ch to be poked on notifications about key, and on
// every (re)connection of the listener. It returns the unsubscribe func.
func (l *listener) subscribe(key string, ch chan struct{}) func() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.subs[key] == nil {
		l.subs[key] = map[chan struct{}]struct{}{}
	}
	l.subs[key][ch] = struct{}{}
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.subs[key], ch)
		if len(l.subs[key]) == 0 {
			delete(l.subs, key)
		}
	}
}

// poke wakes the watchers of key without blocking: a pending wake-up is
// enough, since a watcher re-reads the key's whole state.
func (l *listener) poke(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for ch := range l.subs[key] {
		wake(ch)
	}
}

// pokeAll wakes every watcher, after notifications may have been missed.
func (l *listener) pokeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, chs := range l.subs {
		for ch := range chs {
			wake(ch)
		}
	}
}

func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// run keeps a LISTEN connection open until ctx ends, reconnecting with
// backoff (at most the poll interval) when it fails. An outage is logged
// once, then summed up (outage.Log).
func (c *Coordinator) runListener(ctx context.Context, l *listener) {
	defer c.wg.Done()
	backoff := 50 * time.Millisecond
	down := outage.Log{Msg: "postgres: LISTEN connection failed; watchers poll until it is back"}
	for {
		err := c.listenOnce(ctx, l, func() { down.Succeeded(c.o.logger, "channel", c.o.channel) })
		if ctx.Err() != nil {
			return
		}
		down.Failed(c.o.logger, err, "channel", c.o.channel)
		l.pokeAll()
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, c.o.pollInterval)
	}
}

// listenOnce takes a connection out of the pool for good, LISTENs on the
// channel (then calls listening) and delivers notifications until the
// connection fails or ctx ends.
func (c *Coordinator) listenOnce(ctx context.Context, l *listener, listening func()) error {
	pc, err := c.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	conn := pc.Hijack()
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{c.o.channel}.Sanitize()); err != nil {
		return err
	}
	listening()
	c.restore(ctx) // announce the watched keys again if that connection failed too
	l.pokeAll()    // changes made while nobody listened
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		l.poke(n.Payload)
	}
}

// Watch sends key's current leadership, then every change: a new holder or
// token, a release, an expiry. Acquisitions and releases arrive at once, as
// notifications on the coordinator's channel; an expiry when the lease is
// due to end (the watcher asks the database how long the lease has left),
// although nothing notifies it; anything missed at the next poll
// (WithPollInterval).
//
// Events are coalesced: a slow reader sees the latest state. A free event
// may repeat: when the key was held and released again between two reads,
// the watcher reports it free again (its token moved), so that a follower
// that lost a race for the key learns of the next release. The channel is
// closed when ctx ends, when the coordinator is closed, or after 3 reads of
// the key in a row have failed (the database is unreachable); callers then
// fall back to polling.
func (c *Coordinator) Watch(ctx context.Context, key string) (<-chan tenure.LeaderEvent, error) {
	if err := tenure.ValidateKey(key); err != nil {
		return nil, err
	}
	l, err := c.startWatcher()
	if err != nil {
		return nil, err
	}

	poke := make(chan struct{}, 1)
	unsubscribe := l.subscribe(key, poke) // before the first read: miss nothing
	c.enter(ctx, key)                     // likewise: releases notify from now on
	unsubscribe = func(unsub func()) func() { return func() { unsub(); c.leave(key) } }(unsubscribe)
	first, err := c.observe(ctx, key)
	if err != nil {
		unsubscribe()
		c.wg.Done()
		return nil, err
	}
	out := make(chan tenure.LeaderEvent, 1)
	out <- first.ev
	go c.watch(ctx, key, out, poke, unsubscribe, first)
	return out, nil
}

// startWatcher starts the listener if it is not running and counts one
// more watcher in c.wg, so that Close waits for it: the watcher calls
// c.wg.Done when it ends.
func (c *Coordinator) startWatcher() (*listener, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, tenure.ErrClosed
	}
	if c.listener == nil {
		c.listener = &listener{subs: map[string]map[chan struct{}]struct{}{}}
		c.wg.Add(1)
		go c.runListener(c.ctx, c.listener)
	}
	c.wg.Add(1)
	return c.listener, nil
}

// watcherContext returns a context for a watcher's goroutine: ctx, ended
// by Close too. The goroutine calls end when it returns.
func (c *Coordinator) watcherContext(ctx context.Context) (wctx context.Context, end func()) {
	wctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.ctx, cancel) // Close ends every watch
	return wctx, func() { stop(); cancel() }
}

// observation is one read of a key by a watcher.
type observation struct {
	ev tenure.LeaderEvent
	// token is the key's latest token, live or not, so that a watcher can
	// tell "free again after another tenure" from "still free".
	token uint64
	// left is the time left on a live lease, on the database's clock.
	left time.Duration
}

// observe reads key's state for a watcher.
func (c *Coordinator) observe(ctx context.Context, key string) (observation, error) {
	var holder pgtype.Text
	var token int64
	var live bool
	var leftUS pgtype.Int8
	err := c.pool.QueryRow(ctx, c.sql.observe, key).Scan(&holder, &token, &live, &leftUS)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return observation{ev: tenure.LeaderEvent{Key: key}}, nil
	case err != nil:
		return observation{}, fmt.Errorf("postgres: watch %q: %w", key, err)
	case live: // a row without holder_id is held by "", as Acquire sees it (see ListForeign)
		g := tenure.Grant{Key: key, Holder: holder.String, Token: uint64(token), TTL: time.Duration(max(leftUS.Int64, 1)) * time.Microsecond}
		return observation{ev: tenure.LeaderEvent{Key: key, Held: true, Grant: g}, token: uint64(token), left: g.TTL}, nil
	default:
		return observation{ev: tenure.LeaderEvent{Key: key}, token: uint64(token)}, nil
	}
}

// watch is the goroutine of one Watch.
func (c *Coordinator) watch(ctx context.Context, key string, out chan tenure.LeaderEvent, poke chan struct{}, unsubscribe func(), last observation) {
	defer c.wg.Done()
	defer close(out)
	defer unsubscribe()
	ctx, end := c.watcherContext(ctx)
	defer end()

	timer := time.NewTimer(c.nextRead(last))
	defer timer.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-poke:
		case <-timer.C:
		}
		o, err := c.observe(ctx, key)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			failures++
			c.o.logger.Warn("postgres: watch read failed", "key", key, "failures", failures, "err", err)
			if failures >= watchFailures {
				return
			}
			timer.Reset(c.o.pollInterval)
			continue
		}
		failures = 0
		if changed(last, o) {
			offer(out, o.ev)
		}
		last = o
		timer.Reset(c.nextRead(o))
	}
}

// nextRead is how long a watcher waits before re-reading its key without a
// notification: the poll interval, or just past the lease's end if sooner.
func (c *Coordinator) nextRead(o observation) time.Duration {
	if o.ev.Held {
		return min(c.o.pollInterval, o.left+time.Millisecond)
	}
	return c.o.pollInterval
}

// changed reports whether b is news after a: renewals (same holder and
// token) are not, but a key found free again after a tenure the watcher
// did not see (its token moved) is, so that a follower that lost a race
// for the key hears of its next release.
func changed(a, b observation) bool {
	if a.ev.Held != b.ev.Held || a.token != b.token {
		return true
	}
	return a.ev.Held && a.ev.Grant.Holder != b.ev.Grant.Holder
}

// offer sends ev on out, replacing an event the reader has not taken yet.
// It never blocks: the caller is out's only sender.
func offer(out chan tenure.LeaderEvent, ev tenure.LeaderEvent) {
	select {
	case out <- ev:
		return
	default:
	}
	select {
	case <-out:
	default:
	}
	out <- ev
}
