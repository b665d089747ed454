package memory

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/timerwait"
)

// Errors of the memory coordinator. Callers match them with errors.Is: a test
// or simulation that injects a fault tells its errors from others.
var (
	// ErrPartitioned is wrapped by the error of every call from a holder cut
	// off by Partition. Such a call fails at once; if the partition began
	// while the call was in flight, it may or may not have been applied.
	ErrPartitioned = errors.New("memory: partitioned from the coordinator")

	// ErrRestarted is wrapped by the error of a call that was in flight when
	// the coordinator restarted (see Restart). The call may or may not have
	// been applied.
	ErrRestarted = errors.New("memory: coordinator restarted")
)

var _ tenure.Coordinator = (*Coordinator)(nil)

// An Option configures a Coordinator that New makes.
type Option func(*Coordinator)

// WithMinTTL makes the coordinator grant at least min: a shorter TTL asked
// for is raised to min, and the grant reports the TTL actually granted, as
// etcd does with its minimum lease. TTLs that tenure.ValidateTTL rejects are
// still rejected. A min of zero or less sets no minimum.
func WithMinTTL(min time.Duration) Option {
	return func(c *Coordinator) { c.minTTL = min }
}

// A Coordinator is an in-process tenure.Coordinator. It also implements
// partition.Coordinator, and offers fault hooks (Partition,
// Block, SetLatency, DropReplies, Heal, HealAll), clock controls
// (SetClockRate, JumpClock) and Restart. Create one with New (the zero value
// is not usable); it is safe for concurrent use. Close stops its goroutine.
type Coordinator struct {
	minTTL time.Duration

	mu       sync.Mutex
	clock    clock
	keys     map[string]*keyState // every key ever used; never removed, so tokens are never reused
	leased   map[string]*keyState // keys with a lease, live or not yet expired by the loop
	wakeAt   time.Duration        // coordinator time the expiry loop will wake at; valid if armed
	armed    bool
	faults   map[string]faults
	gen      chan struct{} // closed by Restart, then replaced: fails calls in flight
	closed   bool
	inflight sync.WaitGroup // watch cleanups not yet run

	wake     chan struct{} // pokes the expiry loop (1-buffered)
	done     chan struct{} // closed by Close
	loopDone chan struct{} // closed when the expiry loop has returned

	groups map[string]*group // partition groups (group.go), created lazily; under mu
}

// keyState is what the coordinator knows about one key.
type keyState struct {
	key      string
	token    uint64 // the last token granted; 0 if never granted
	lease    *lease // nil when free
	watchers map[*watcher]struct{}
}

// lease is a live (or expired but not yet collected) grant.
type lease struct {
	holder  string
	token   uint64
	ttl     time.Duration
	expires time.Duration // on the coordinator's clock
}

func (l *lease) grant(key string) tenure.Grant {
	return tenure.Grant{Key: key, Holder: l.holder, Token: l.token, TTL: l.ttl}
}

// New returns a running Coordinator whose clock runs at the real rate. It
// starts one goroutine, which expires leases as they run out; Close stops
// it (inside a testing/synctest bubble, Close before the bubble ends).
// It is for tests, demos and simulations: its state lives in one process.
func New(opts ...Option) *Coordinator {
	c := &Coordinator{
		clock:    clock{baseReal: time.Now(), rate: 1},
		keys:     make(map[string]*keyState),
		leased:   make(map[string]*keyState),
		faults:   make(map[string]faults),
		gen:      make(chan struct{}),
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
		loopDone: make(chan struct{}),
	}
	for _, opt := range opts {
		opt(c)
	}
	go c.expireLoop()
	return c
}

// Acquire grants key to holder for ttl (raised to the minimum TTL, if one
// was set with WithMinTTL) if the key is free or its lease has expired on
// the coordinator's clock, with a token one greater than the last granted
// for key. A key that is a partition of a group (PartitionKey) owned by a
// live member is held: the error names the partition and the group, and
// wraps a *tenure.HeldError naming the member. See tenure.Coordinator. The call is subject to holder's faults.
func (c *Coordinator) Acquire(ctx context.Context, key, holder string, ttl time.Duration) (tenure.Grant, error) {
	if err := validate(key, holder, ttl); err != nil {
		return tenure.Grant{}, fmt.Errorf("memory: acquire: %w", err)
	}
	ttl = max(ttl, c.minTTL)
	sent := tenure.Now() // the call is the request: it starts the lease
	var g tenure.Grant
	err := c.call(ctx, []string{holder}, func() error {
		var err error
		g, err = c.acquireLocked(key, holder, ttl)
		return err
	})
	g.Sent = sent
	if err != nil {
		return tenure.Grant{}, fmt.Errorf("memory: acquire %q for %q: %w", key, holder, err)
	}
	return g, nil
}

func validate(key, holder string, ttl time.Duration) error {
	if err := tenure.ValidateKey(key); err != nil {
		return err
	}
	if err := tenure.ValidateHolder(holder); err != nil {
		return err
	}
	return tenure.ValidateTTL(ttl)
}

func (c *Coordinator) acquireLocked(key, holder string, ttl time.Duration) (tenure.Grant, error) {
	now := c.clock.now()
	ks := c.keyLocked(key)
	if l := c.liveLocked(ks, now); l != nil && l.holder != holder {
		return tenure.Grant{}, &tenure.HeldError{Key: key, Holder: l.holder, Token: l.token}
	}
	if group, name, owner := c.partitionOwnerLocked(key, now); owner != nil {
		return tenure.Grant{}, fmt.Errorf("partition %q of group %q is owned by member %q: %w", name, group, owner.id, &tenure.HeldError{Key: key, Holder: owner.id, Token: ks.token})
	}
	if ks.token == math.MaxUint64 {
		return tenure.Grant{}, fmt.Errorf("tokens of key %q exhausted", key)
	}
	ks.token++
	l := &lease{holder: holder, token: ks.token, ttl: ttl, expires: now + ttl}
	ks.lease = l
	c.leased[key] = ks
	c.scheduleLocked(l.expires)
	c.notifyLocked(ks)
	return l.grant(key), nil
}

// Renew extends g's lease by its granted TTL from now on the coordinator's
// clock. A grant that expired, was released or was superseded is reported
// with an error wrapping tenure.ErrLost and is never revived. The call is
// subject to the faults of g.Holder.
func (c *Coordinator) Renew(ctx context.Context, g tenure.Grant) (tenure.Grant, error) {
	if err := g.Validate(); err != nil {
		return tenure.Grant{}, fmt.Errorf("memory: renew: %w", err)
	}
	sent := tenure.Now()
	var r tenure.Grant
	err := c.call(ctx, []string{g.Holder}, func() error {
		var err error
		r, err = c.renewLocked(g)
		return err
	})
	r.Sent = sent
	if err != nil {
		return tenure.Grant{}, fmt.Errorf("memory: renew %s: %w", g, err)
	}
	return r, nil
}

func (c *Coordinator) renewLocked(g tenure.Grant) (tenure.Grant, error) {
	now := c.clock.now()
	ks := c.keys[g.Key]
	if ks == nil {
		return tenure.Grant{}, fmt.Errorf("key never granted: %w", tenure.ErrLost)
	}
	l := c.liveLocked(ks, now)
	switch {
	case g.Token > ks.token:
		return tenure.Grant{}, fmt.Errorf("token %d was never granted: %w", g.Token, tenure.ErrLost)
	case l == nil:
		return tenure.Grant{}, fmt.Errorf("expired or released: %w", tenure.ErrLost)
	case l.token != g.Token:
		return tenure.Grant{}, fmt.Errorf("superseded by token %d: %w", l.token, tenure.ErrLost)
	case l.holder != g.Holder:
		return tenure.Grant{}, fmt.Errorf("token %d was granted to %q: %w", l.token, l.holder, tenure.ErrLost)
	}
	l.expires = now + l.ttl
	c.scheduleLocked(l.expires)
	return l.grant(g.Key), nil
}

// Release ends g now. Releasing a grant that is already gone (expired,
// released, superseded, or never granted) is not an error and changes
// nothing. The call is subject to the faults of g.Holder.
func (c *Coordinator) Release(ctx context.Context, g tenure.Grant) error {
	if err := g.Validate(); err != nil {
		return fmt.Errorf("memory: release: %w", err)
	}
	err := c.call(ctx, []string{g.Holder}, func() error {
		c.releaseLocked(g)
		return nil
	})
	if err != nil {
		return fmt.Errorf("memory: release %s: %w", g, err)
	}
	return nil
}

func (c *Coordinator) releaseLocked(g tenure.Grant) {
	ks := c.keys[g.Key]
	if ks == nil {
		return
	}
	l := c.liveLocked(ks, c.clock.now())
	if l == nil || l.token != g.Token || l.holder != g.Holder {
		return
	}
	ks.lease = nil
	delete(c.leased, g.Key)
	c.notifyLocked(ks)
}

// Leader returns the live grant on key, with ok false when the key is free.
// Leader has no holder: it is an observer and never faulted.
func (c *Coordinator) Leader(ctx context.Context, key string) (tenure.Grant, bool, error) {
	if err := tenure.ValidateKey(key); err != nil {
		return tenure.Grant{}, false, fmt.Errorf("memory: leader: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return tenure.Grant{}, false, fmt.Errorf("memory: leader of %q: %w", key, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return tenure.Grant{}, false, fmt.Errorf("memory: leader of %q: %w", key, tenure.ErrClosed)
	}
	ks := c.keys[key]
	if ks == nil {
		return tenure.Grant{}, false, nil
	}
	l := c.liveLocked(ks, c.clock.now())
	if l == nil {
		return tenure.Grant{}, false, nil
	}
	return l.grant(key), true, nil
}

// Close stops the coordinator: calls in flight and later calls fail with
// errors wrapping tenure.ErrClosed, watch channels close, and Close waits
// for the coordinator's goroutines to end. Leases are not released. Close
// is idempotent.
func (c *Coordinator) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.done)
	c.closeWatchersLocked()
	c.mu.Unlock()
	<-c.loopDone
	c.inflight.Wait()
	return nil
}

// Restart simulates a crash and restart of the coordinator. Calls in flight
// (delayed, blocked or awaiting a reply) fail with errors wrapping
// ErrRestarted, whether or not they had been applied, and every watch
// channel closes, as a watch stream breaks when its server dies. State is
// durable: tokens, leases and their expiry times on the coordinator's clock
// survive, as they do in etcd. Faults are kept.
func (c *Coordinator) Restart() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	close(c.gen)
	c.gen = make(chan struct{})
	c.closeWatchersLocked()
}

// keyLocked returns the state of key, creating it.
func (c *Coordinator) keyLocked(key string) *keyState {
	ks := c.keys[key]
	if ks == nil {
		ks = &keyState{key: key, watchers: make(map[*watcher]struct{})}
		c.keys[key] = ks
	}
	return ks
}

// liveLocked returns the live lease of ks at coordinator time now, or nil.
// A lease found expired is collected, and watchers are told.
func (c *Coordinator) liveLocked(ks *keyState, now time.Duration) *lease {
	l := ks.lease
	if l == nil {
		return nil
	}
	if l.expires > now {
		return l
	}
	ks.lease = nil
	delete(c.leased, ks.key)
	c.notifyLocked(ks)
	return nil
}

// scheduleLocked makes sure the expiry loop wakes by coordinator time at.
func (c *Coordinator) scheduleLocked(at time.Duration) {
	if c.armed && c.wakeAt <= at {
		return
	}
	c.pokeLocked()
}

// pokeLocked makes the expiry loop recompute its timer.
func (c *Coordinator) pokeLocked() {
	c.armed = false
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// expireLoop collects expired leases as they expire on the coordinator's
// clock, so that watchers hear of expiry without anyone asking.
func (c *Coordinator) expireLoop() {
	defer close(c.loopDone)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		c.mu.Lock()
		wait, ok := c.collectLocked()
		c.mu.Unlock()
		if ok {
			timer.Reset(timerwait.Delay(wait))
		} else {
			timer.Stop()
		}
		select {
		case <-c.done:
			return
		case <-c.wake:
		case <-timer.C:
		}
	}
}

// collectLocked expires every lease due by now and arms the loop for the
// next expiry. It returns the real time to wait, and false if no lease is
// pending.
func (c *Coordinator) collectLocked() (time.Duration, bool) {
	now := c.clock.now()
	var next time.Duration
	found := false
	for _, ks := range c.leased {
		l := c.liveLocked(ks, now)
		if l == nil {
			continue
		}
		if !found || l.expires < next {
			next, found = l.expires, true
		}
	}
	c.armed, c.wakeAt = found, next
	if !found {
		return 0, false
	}
	return c.clock.realUntil(next, now), true
}
