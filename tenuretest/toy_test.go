package tenuretest_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/tenuretest"
)

// bugs are the defects a toy coordinator can be built with, each one a
// violation of the contract that some check of the suite must catch.
type bugs struct {
	reuseTokens      bool // the token sequence restarts after a release
	reviveExpired    bool // Renew extends an expired lease nobody took
	noExclusion      bool // Acquire ignores other holders' leases
	heldWrongToken   bool // HeldError names token 0
	earlyExpiry      bool // leases last a third of their TTL
	lateExpiry       bool // leases last ten times their TTL
	renewNoop        bool // Renew reports success but does not extend
	renewShort       bool // Renew extends by half the TTL only
	renewLostAsOther bool // Renew of a grant that is not the live one fails without ErrLost
	closeOnlyAcquire bool // after Close only Acquire and Leader are refused
	renewSuperseded  bool // Renew checks the holder but not the token
	releaseAny       bool // Release ends the key's lease whoever presents what
	releaseNoop      bool // Release does nothing
	noValidation     bool // malformed inputs are accepted
	leaderStale      bool // Leader reports expired leases as live
	watchNoExpiry    bool // Watch never reports an expiry
	watchNoClose     bool // Watch's channel ignores its context
	sharedRenew      bool // Renew extends every lease of the grant's holder
	leaseAhead       bool // a refused holder's lease starts at the refusal; Acquire reports Sent as now
	noSent           bool // grants carry no Sent
	ignoreContext    bool // calls with an ended context go ahead
	usableAfterClose bool // calls after Close go ahead
	forgetOnRestart  bool // Restart loses the token sequence
	renewRecordTTL   bool // Renew extends by and reports the record's TTL, edited or not
	rewriteEdited    bool // Renew of a grant whose record was edited writes it back, whoever holds the key
	removeTokens     bool // the token sequence lives in the record: removing it starts the sequence again
	lengthenRemoves  bool // not a bug: the toy's Lengthen ends the grant, as a revocation does on etcd
	renewEndsEdited  bool // Renew of a grant whose record was edited reports success and leaves the record ended
}

// toy is a small Coordinator on real time, correct unless built with bugs.
type toy struct {
	bugs bugs

	mu     sync.Mutex
	tokens map[string]uint64
	leases map[string]*toyLease
	ahead  map[string]time.Time // key+holder → when a refused Acquire started a lease (leaseAhead)
	edited map[string]uint64    // key → token of the grant whose record was last edited (rewriteEdited)
	closed bool
	done   chan struct{}
	wg     sync.WaitGroup
}

type toyLease struct {
	holder  string
	token   uint64
	ttl     time.Duration
	expires time.Time
}

var (
	_ tenure.Coordinator = (*toy)(nil)
	_ tenure.Coordinator = (*toy)(nil)
)

func newToy(b bugs) *toy {
	return &toy{
		bugs:   b,
		tokens: make(map[string]uint64),
		leases: make(map[string]*toyLease),
		ahead:  make(map[string]time.Time),
		edited: make(map[string]uint64),
		done:   make(chan struct{}),
	}
}

func (c *toy) life(ttl time.Duration) time.Duration {
	switch {
	case c.bugs.earlyExpiry:
		return ttl / 3
	case c.bugs.lateExpiry:
		return 10 * ttl
	}
	return ttl
}

// enter checks the context and whether the toy is closed, and locks it.
func (c *toy) enter(ctx context.Context) error { return c.enterOp(ctx, true) }

// enterOp is enter for an operation that a closeOnlyAcquire toy checks for
// Close (checked) or not.
func (c *toy) enterOp(ctx context.Context, checked bool) error {
	if err := ctx.Err(); err != nil && !c.bugs.ignoreContext {
		return fmt.Errorf("toy: %w", err)
	}
	c.mu.Lock()
	if c.closed && !c.bugs.usableAfterClose && (checked || !c.bugs.closeOnlyAcquire) {
		c.mu.Unlock()
		return fmt.Errorf("toy: %w", tenure.ErrClosed)
	}
	return nil
}

func (c *toy) Acquire(ctx context.Context, key, holder string, ttl time.Duration) (tenure.Grant, error) {
	if !c.bugs.noValidation {
		if err := tenure.ValidateKey(key); err != nil {
			return tenure.Grant{}, fmt.Errorf("toy: %w", err)
		}
		if err := tenure.ValidateHolder(holder); err != nil {
			return tenure.Grant{}, fmt.Errorf("toy: %w", err)
		}
		if err := tenure.ValidateTTL(ttl); err != nil {
			return tenure.Grant{}, fmt.Errorf("toy: %w", err)
		}
	}
	sent := tenure.Now()
	if err := c.enter(ctx); err != nil {
		return tenure.Grant{}, err
	}
	defer c.mu.Unlock()
	now := time.Now()
	if l := c.leases[key]; l != nil && now.Before(l.expires) && l.holder != holder && !c.bugs.noExclusion {
		he := &tenure.HeldError{Key: key, Holder: l.holder, Token: l.token}
		if c.bugs.heldWrongToken {
			he.Token = 0
		}
		if _, ok := c.ahead[key+"\x00"+holder]; !ok && c.bugs.leaseAhead {
			c.ahead[key+"\x00"+holder] = now
		}
		return tenure.Grant{}, he
	}
	start := now
	if t, ok := c.ahead[key+"\x00"+holder]; ok {
		start = t // the lease started at the refusal, but Sent says now
		delete(c.ahead, key+"\x00"+holder)
	}
	c.tokens[key]++
	l := &toyLease{holder: holder, token: c.tokens[key], ttl: ttl, expires: start.Add(c.life(ttl))}
	c.leases[key] = l
	return tenure.Grant{Key: key, Holder: holder, Token: l.token, TTL: ttl, Sent: c.sent(sent)}, nil
}

func (c *toy) Renew(ctx context.Context, g tenure.Grant) (tenure.Grant, error) {
	if err := g.Validate(); err != nil && !c.bugs.noValidation {
		return tenure.Grant{}, fmt.Errorf("toy: %w", err)
	}
	sent := tenure.Now()
	if err := c.enterOp(ctx, false); err != nil {
		return tenure.Grant{}, err
	}
	defer c.mu.Unlock()
	r, err := c.renewLocked(g)
	if err == nil {
		r.Sent = c.sent(sent)
	}
	return r, err
}

// sent is what a grant reports as Sent.
func (c *toy) sent(at tenure.Instant) tenure.Instant {
	if c.bugs.noSent {
		return tenure.Instant{}
	}
	return at
}

func (c *toy) renewLocked(g tenure.Grant) (tenure.Grant, error) {
	now := time.Now()
	l := c.leases[g.Key]
	if c.bugs.rewriteEdited && c.edited[g.Key] == g.Token && g.Token != 0 {
		l = &toyLease{holder: g.Holder, token: g.Token, ttl: g.TTL, expires: now.Add(g.TTL)}
		c.leases[g.Key] = l
	}
	if l == nil || l.holder != g.Holder || (l.token != g.Token && !c.bugs.renewSuperseded) {
		if c.bugs.renewLostAsOther {
			return tenure.Grant{}, fmt.Errorf("toy: renew %v: not the live grant", g)
		}
		return tenure.Grant{}, fmt.Errorf("toy: renew %v: %w", g, tenure.ErrLost)
	}
	if !now.Before(l.expires) && !c.bugs.reviveExpired {
		delete(c.leases, g.Key)
		return tenure.Grant{}, fmt.Errorf("toy: renew %v: expired: %w", g, tenure.ErrLost)
	}
	ttl := min(l.ttl, g.TTL) // an edited record never lengthens the grant
	if c.bugs.renewRecordTTL {
		ttl = l.ttl
	}
	switch {
	case c.bugs.renewEndsEdited && c.edited[g.Key] == g.Token:
		l.expires = now
	case c.bugs.renewShort:
		l.expires = now.Add(c.life(ttl) / 2)
	case !c.bugs.renewNoop:
		l.expires = now.Add(c.life(ttl))
	}
	if c.bugs.sharedRenew {
		for _, o := range c.leases {
			if o.holder == g.Holder && now.Before(o.expires) {
				o.expires = now.Add(c.life(o.ttl))
			}
		}
	}
	return tenure.Grant{Key: g.Key, Holder: g.Holder, Token: g.Token, TTL: ttl}, nil
}

func (c *toy) Release(ctx context.Context, g tenure.Grant) error {
	if err := g.Validate(); err != nil && !c.bugs.noValidation {
		return fmt.Errorf("toy: %w", err)
	}
	if err := c.enterOp(ctx, false); err != nil {
		return err
	}
	defer c.mu.Unlock()
	l := c.leases[g.Key]
	if c.bugs.releaseNoop || l == nil {
		return nil
	}
	if c.bugs.releaseAny || (l.holder == g.Holder && l.token == g.Token) {
		delete(c.leases, g.Key)
		if c.bugs.reuseTokens {
			delete(c.tokens, g.Key)
		}
	}
	return nil
}

func (c *toy) Leader(ctx context.Context, key string) (tenure.Grant, bool, error) {
	if err := tenure.ValidateKey(key); err != nil && !c.bugs.noValidation {
		return tenure.Grant{}, false, fmt.Errorf("toy: %w", err)
	}
	if err := c.enter(ctx); err != nil {
		return tenure.Grant{}, false, err
	}
	defer c.mu.Unlock()
	ev := c.eventLocked(key, c.bugs.leaderStale)
	return ev.Grant, ev.Held, nil
}

func (c *toy) eventLocked(key string, stale bool) tenure.LeaderEvent {
	l := c.leases[key]
	if l == nil || (!stale && !time.Now().Before(l.expires)) {
		return tenure.LeaderEvent{Key: key}
	}
	return tenure.LeaderEvent{Key: key, Held: true, Grant: tenure.Grant{Key: key, Holder: l.holder, Token: l.token, TTL: l.ttl}}
}

// Watch polls every millisecond and sends changes, coalesced.
func (c *toy) Watch(ctx context.Context, key string) (<-chan tenure.LeaderEvent, error) {
	if err := tenure.ValidateKey(key); err != nil && !c.bugs.noValidation {
		return nil, fmt.Errorf("toy: %w", err)
	}
	if err := c.enterOp(ctx, false); err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	stop := ctx.Done()
	if c.bugs.watchNoClose {
		stop = nil
	}
	ch := make(chan tenure.LeaderEvent, 1)
	last := c.eventLocked(key, c.bugs.watchNoExpiry)
	ch <- last
	c.wg.Go(func() {
		defer close(ch)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-c.done:
				return
			case <-tick.C:
			}
			c.mu.Lock()
			ev := c.eventLocked(key, c.bugs.watchNoExpiry)
			c.mu.Unlock()
			if ev == last {
				continue
			}
			last = ev
			select {
			case ch <- ev:
			default:
				select {
				case <-ch:
				default:
				}
				ch <- ev
			}
		}
	})
	return ch, nil
}

// edits edit the toy's record of a live grant as an operator would edit a
// backend's: Lengthen and Shorten set its TTL and expiry, Remove deletes it
// (and so does Lengthen, with lengthenRemoves).
func (c *toy) edits() tenuretest.Edits {
	set := func(tb testing.TB, g tenure.Grant, d time.Duration) {
		tb.Helper()
		c.mu.Lock()
		defer c.mu.Unlock()
		l := c.leases[g.Key]
		if l == nil || l.token != g.Token {
			tb.Fatalf("toy: no record of %v to edit", g)
		}
		l.ttl, l.expires = d, time.Now().Add(d)
		c.edited[g.Key] = g.Token
	}
	remove := func(tb testing.TB, g tenure.Grant) {
		tb.Helper()
		c.mu.Lock()
		defer c.mu.Unlock()
		if l := c.leases[g.Key]; l == nil || l.token != g.Token {
			tb.Fatalf("toy: no record of %v to remove", g)
		}
		delete(c.leases, g.Key)
		if c.bugs.removeTokens {
			delete(c.tokens, g.Key)
		}
		c.edited[g.Key] = g.Token
	}
	lengthen := set
	if c.bugs.lengthenRemoves {
		lengthen = func(tb testing.TB, g tenure.Grant, _ time.Duration) { tb.Helper(); remove(tb, g) }
	}
	return tenuretest.Edits{Lengthen: lengthen, Shorten: set, Remove: remove}
}

func (c *toy) Restart() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bugs.forgetOnRestart {
		clear(c.tokens)
	}
}

func (c *toy) Close() error {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		close(c.done)
	}
	c.mu.Unlock()
	c.wg.Wait()
	return nil
}

// List returns the live grants under prefix, sorted by key, with the time
// left on each lease as TTL.
func (c *toy) List(ctx context.Context, prefix string) ([]tenure.Grant, error) {
	if err := c.enterOp(ctx, false); err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	var out []tenure.Grant
	for key, l := range c.leases {
		if left := time.Until(l.expires); left > 0 && strings.HasPrefix(key, prefix) {
			out = append(out, tenure.Grant{Key: key, Holder: l.holder, Token: l.token, TTL: left})
		}
	}
	slices.SortFunc(out, func(a, b tenure.Grant) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}
