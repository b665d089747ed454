package etcd

import (
	"context"

	"github.com/tenure-dev/tenure"
)

// orphan records g as a grant whose release failed. Its key is attached to
// the holder's shared lease, which the holder's other grants keep alive: left
// alone it would never expire and nobody else could take it.
func (c *Coordinator) orphan(g tenure.Grant) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.orphans[g.Key] = g
}

// adopted forgets an orphan on g's key that g has since been released, or
// superseded, by a successful call.
func (c *Coordinator) adopted(g tenure.Grant) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if o, ok := c.orphans[g.Key]; ok && o.Token <= g.Token {
		delete(c.orphans, g.Key)
	}
}

// releaseOrphans retries the release of every orphaned grant of the holders
// of gs, and the leaving of line entries left behind (handoff.go), before
// their shared leases are extended. A release that fails again
// stays recorded for the next renewal. A grant that is being renewed is
// never an orphan: renewing it means its elector is alive and wants it.
func (c *Coordinator) releaseOrphans(ctx context.Context, gs []tenure.Grant) {
	holders := make(map[string]bool, 1)
	renewing := make(map[string]uint64, len(gs))
	for _, g := range gs {
		holders[g.Holder] = true
		renewing[g.Key] = g.Token
	}
	c.clearLeftovers(ctx, holders)
	c.mu.Lock()
	var todo []tenure.Grant
	for _, o := range c.orphans {
		if holders[o.Holder] {
			todo = append(todo, o)
		}
	}
	c.mu.Unlock()
	for _, o := range todo {
		if tok, ok := renewing[o.Key]; ok && tok >= o.Token {
			c.adopted(o) // acquired again and renewed: not an orphan
			continue
		}
		if err := c.deleteGrant(ctx, o); err != nil {
			c.log.Warn("release of an orphaned key failed again; will retry", "key", o.Key, "token", o.Token, "err", err)
			continue
		}
		c.log.Info("released an orphaned key", "key", o.Key, "token", o.Token)
		c.adopted(o)
	}
}
