package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tenure-dev/tenure"
)

// probe is a coordinator that tells when an acquisition was refused: the
// follower then campaigns and waits, and the trial can begin.
type probe struct {
	tenure.Coordinator
	mu      sync.Mutex
	refused chan struct{} // closed at the next refusal; nil when not armed
}

// arm returns a channel closed at the next refused acquisition.
func (p *probe) arm() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refused = make(chan struct{})
	return p.refused
}

// Acquire acquires through the coordinator and reports a refusal.
func (p *probe) Acquire(ctx context.Context, key, holder string, ttl time.Duration) (tenure.Grant, error) {
	g, err := p.Coordinator.Acquire(ctx, key, holder, ttl)
	if errors.Is(err, tenure.ErrHeld) {
		p.mu.Lock()
		if p.refused != nil {
			close(p.refused)
			p.refused = nil
		}
		p.mu.Unlock()
	}
	return g, err
}

// Watch watches through the coordinator.
func (p *probe) Watch(ctx context.Context, key string) (<-chan tenure.LeaderEvent, error) {
	w, ok := p.Coordinator, true
	if !ok {
		return nil, fmt.Errorf("bench: %T cannot watch", p.Coordinator)
	}
	return w.Watch(ctx, key)
}

// wait waits for ch, at most d.
func wait[T any](ctx context.Context, ch <-chan T, d time.Duration, what string) (T, error) {
	var zero T
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case v := <-ch:
		return v, nil
	case <-t.C:
		return zero, fmt.Errorf("bench: %s: nothing within %s", what, d)
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
