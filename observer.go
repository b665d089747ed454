package tenure

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// defaultPollInterval is how often an Observer reads the leadership of a key
// while its watch is down.
const defaultPollInterval = time.Second

// An Observer follows who leads a key without campaigning for it: for a
// follower that wants to know whom it follows, a router that sends work to
// the leader, a status display (client-go's OnNewLeader callback). It
// watches the key, polls Leader while the watch is down,
// and keeps the latest leadership it saw, so that reading it
// costs no round trip. Create one with NewObserver and call Run.
type Observer struct {
	c    Coordinator
	key  string
	poll time.Duration

	mu    sync.Mutex
	cur   LeaderEvent
	known bool
}

// NewObserver returns an Observer of key on c. It polls every
// second while its watch is down. A malformed key is rejected
// with an error wrapping ErrInvalidKey. One Observer follows one key (see
// the Observer example).
func NewObserver(c Coordinator, key string) (*Observer, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: coordinator is nil", ErrInvalidConfig)
	}
	if err := ValidateKey(key); err != nil {
		return nil, fmt.Errorf("observer: %w", err)
	}
	return &Observer{c: c, key: key, poll: defaultPollInterval}, nil
}

// Leader returns the leadership as last seen: ok is false until Run has
// seen it once. ev.Held is false while nobody leads; otherwise ev.Grant
// names the holder and its token.
func (o *Observer) Leader() (ev LeaderEvent, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.cur, o.known
}

// Run follows the key until ctx ends, and returns ctx's error (or at once
// an error the coordinator reports as permanent: a closed coordinator). It
// calls onChange, when not nil, from Run's goroutine with the leadership
// as first seen and then with every change of holder or token, and when the
// key becomes free; a change that comes and goes between two observations
// may be missed (events are coalesced, as Coordinator.Watch says). onChange must not
// block for long. A failed watch is reopened; meanwhile Run polls.
func (o *Observer) Run(ctx context.Context, onChange func(LeaderEvent)) error {
	for {
		if err := o.follow(ctx, o.c, onChange); errors.Is(err, ErrClosed) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		g, held, err := o.c.Leader(ctx, o.key)
		switch {
		case errors.Is(err, ErrClosed):
			return fmt.Errorf("observe %q: %w", o.key, err)
		case err == nil:
			o.saw(LeaderEvent{Key: o.key, Held: held, Grant: g}, onChange)
		}
		if err := sleepCtx(ctx, o.poll); err != nil {
			return err
		}
	}
}

// follow watches the key until the watch ends, and reports why it could
// not open one.
func (o *Observer) follow(ctx context.Context, w Coordinator, onChange func(LeaderEvent)) error {
	ch, err := w.Watch(ctx, o.key)
	if err != nil {
		return fmt.Errorf("observe %q: %w", o.key, err)
	}
	for ev := range ch {
		o.saw(ev, onChange)
	}
	return nil
}

// saw records ev and reports it to onChange when the holder or the token
// changed.
func (o *Observer) saw(ev LeaderEvent, onChange func(LeaderEvent)) {
	o.mu.Lock()
	changed := !o.known || ev.Held != o.cur.Held ||
		(ev.Held && (ev.Grant.Holder != o.cur.Grant.Holder || ev.Grant.Token != o.cur.Grant.Token))
	o.cur, o.known = ev, true
	o.mu.Unlock()
	if changed && onChange != nil {
		onChange(ev)
	}
}
