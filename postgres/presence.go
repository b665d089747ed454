package postgres

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// presence tells writers which keys are watched, so that with
// NotifyWatched an acquisition or release sends a notification (and takes
// PostgreSQL's global notification lock at commit) only when someone
// watches.
//
// A Coordinator that watches a key holds a session-level shared advisory
// lock on (hashtext(channel), hashtext(key)), on a connection of its own,
// for as long as it watches. A writer tries the exclusive transaction-level
// lock on the same pair: when it gets it, nobody watches and it does not
// notify; when it cannot, it notifies. A watcher takes its lock before it
// reads the key: a writer that got the exclusive lock first holds it until
// it commits, so the watcher's lock waits for that commit and its read
// then sees the change. Hash collisions, or another application's
// advisory locks on the same pair, only cause extra notifications.
//
// If the presence connection fails, the locks go with it: writes stop
// notifying until the listener reconnects and restores them, and watchers
// meanwhile see changes at their next poll or lease expiry.
type presence struct {
	mu   sync.Mutex
	conn *pgx.Conn      // nil until the first key, and after a failure
	keys map[string]int // watchers per key
}

// presenceTries and presencePause: how often, and how far apart, a watcher
// tries its shared lock while a writer holds the exclusive one (until it
// commits).
const (
	presenceTries = 50
	presencePause = 2 * time.Millisecond
)

// enter records a watcher of key, taking the key's shared lock if it is
// the first. A failure is logged: the watcher then relies on polling.
func (c *Coordinator) enter(ctx context.Context, key string) {
	p := &c.presence
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keys[key]++
	if p.keys[key] > 1 && p.conn != nil {
		return
	}
	if err := c.lockKeys(ctx, []string{key}); err != nil {
		c.o.logger.Warn("postgres: cannot announce a watch; changes of the key are seen at the next poll",
			"key", key, "err", err)
	}
}

// leave records that a watcher of key is gone, dropping the key's shared
// lock with the last one.
func (c *Coordinator) leave(key string) {
	p := &c.presence
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keys[key]--
	if p.keys[key] > 0 {
		return
	}
	delete(p.keys, key)
	if p.conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := p.conn.Exec(ctx, `SELECT pg_catalog.pg_advisory_unlock_shared(pg_catalog.hashtext($1), pg_catalog.hashtext($2))`, c.o.channel, key); err != nil {
		c.dropPresence()
	}
}

// restore takes the shared locks of every watched key again on a new
// connection, after the listener reconnected.
func (c *Coordinator) restore(ctx context.Context) {
	p := &c.presence
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn != nil || len(p.keys) == 0 {
		return
	}
	keys := make([]string, 0, len(p.keys))
	for k := range p.keys {
		keys = append(keys, k)
	}
	if err := c.lockKeys(ctx, keys); err != nil {
		c.o.logger.Warn("postgres: cannot restore watch announcements", "err", err)
	}
}

// lockKeys takes the shared locks of keys, on the presence connection (made
// first, with every watched key's lock, if there is none). p.mu is held.
func (c *Coordinator) lockKeys(ctx context.Context, keys []string) error {
	p := &c.presence
	if p.conn == nil {
		pc, err := c.pool.Acquire(ctx)
		if err != nil {
			return err
		}
		p.conn = pc.Hijack()
		keys = keys[:0:0]
		for k := range p.keys {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		if err := c.lockKey(ctx, k); err != nil {
			c.dropPresence()
			return err
		}
	}
	return nil
}

// lockKey tries key's shared lock until it gets it: a writer holding the
// exclusive lock keeps it only until it commits.
func (c *Coordinator) lockKey(ctx context.Context, key string) error {
	for range presenceTries {
		var ok bool
		if err := c.presence.conn.QueryRow(ctx, `SELECT pg_catalog.pg_try_advisory_lock_shared(pg_catalog.hashtext($1), pg_catalog.hashtext($2))`, c.o.channel, key).Scan(&ok); err != nil {
			return err
		}
		if ok {
			return nil
		}
		t := time.NewTimer(presencePause)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	return fmt.Errorf("advisory lock of key %q on channel %q is held exclusively by another session", key, c.o.channel)
}

// dropPresence closes the presence connection after a failure. p.mu is
// held.
func (c *Coordinator) dropPresence() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = c.presence.conn.Close(ctx)
	c.presence.conn = nil
}

// closePresence closes the presence connection, for Close.
func (c *Coordinator) closePresence() {
	c.presence.mu.Lock()
	defer c.presence.mu.Unlock()
	if c.presence.conn != nil {
		c.dropPresence()
	}
}
