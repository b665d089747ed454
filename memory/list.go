package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/inputs"
)

// List returns the live grant on every key that starts with prefix, sorted
// by key, each with the time left on its lease as TTL. Partitions of
// groups are listed by GroupPartitions, not here.
func (c *Coordinator) List(ctx context.Context, prefix string) ([]tenure.Grant, error) {
	if err := inputs.Prefix(prefix); err != nil {
		return nil, fmt.Errorf("memory: list: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory: list %q: %w", prefix, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, fmt.Errorf("memory: list %q: %w", prefix, tenure.ErrClosed)
	}
	now := c.clock.now()
	var out []tenure.Grant
	for key, ks := range c.leased {
		if !strings.HasPrefix(key, prefix) {
			continue
		}
		if l := c.liveLocked(ks, now); l != nil {
			g := l.grant(key)
			g.TTL = l.expires - now
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b tenure.Grant) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}
