package etcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/boottime"
)

// DefaultPrefix is the etcd key prefix under which tenure keys live, unless
// changed with WithPrefix.
const DefaultPrefix = "/tenure/leader/"

// Compile-time checks that Coordinator has every capability.
var (
	_ tenure.Coordinator  = (*Coordinator)(nil)
	_ tenure.Watcher      = (*Coordinator)(nil)
	_ tenure.BatchRenewer = (*Coordinator)(nil)
	_ tenure.Candidate    = (*Coordinator)(nil)
)

// Coordinator is a tenure.Coordinator on etcd. It also implements
// tenure.Watcher, tenure.Candidate and tenure.BatchRenewer. It is safe for
// concurrent use.
type Coordinator struct {
	client     *clientv3.Client
	ownsClient bool
	prefix     string
	log        *slog.Logger

	// ctx is cancelled by Close; watch goroutines end with it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	closed bool
	leases map[leaseKey]*sharedLease
	// orphans are grants whose Release failed. Their keys hang on a shared
	// lease that the holder's other grants keep alive, so they would never
	// expire: every renewal retries their release first (orphan.go).
	orphans map[string]tenure.Grant

	// Hand-off on release (handoff.go): the line entries, the latest
	// state of each watched key, and the greatest token returned per key.
	line      line
	seen      map[string]seenKey
	given     map[string]int64
	nonce     string           // names this coordinator's line entries
	seq       uint64           // numbers its waits
	waits     map[string]*wait // line entry → a wait in line now
	leftovers map[string]*wait // line entries maybe left in etcd, to clear
	mine      map[entryOf]bool // keys and leases of this coordinator's waits and leftovers
}

// An Option configures a Coordinator.
type Option func(*Coordinator)

// WithPrefix sets the etcd key prefix under which tenure keys live. Default
// DefaultPrefix. A prefix normally ends with "/".
func WithPrefix(prefix string) Option {
	return func(c *Coordinator) { c.prefix = prefix }
}

// WithLogger sets where the coordinator logs (lease expiries and grants at
// debug level). Nil, the default, discards.
func WithLogger(l *slog.Logger) Option {
	return func(c *Coordinator) { c.log = l }
}

// New returns a Coordinator that talks to etcd through client. The caller
// keeps ownership of client: Close does not close it, and the caller must not
// close it before closing the Coordinator.
func New(client *clientv3.Client, opts ...Option) (*Coordinator, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: nil etcd client", ErrInvalidConfig)
	}
	return newCoordinator(client, false, opts)
}

func newCoordinator(client *clientv3.Client, owns bool, opts []Option) (*Coordinator, error) {
	c := &Coordinator{
		client:     client,
		ownsClient: owns,
		prefix:     DefaultPrefix,
		leases:     make(map[leaseKey]*sharedLease),
		orphans:    make(map[string]tenure.Grant),
		seen:       make(map[string]seenKey),
		given:      make(map[string]int64),
		nonce:      newNonce(),
		waits:      make(map[string]*wait),
		leftovers:  make(map[string]*wait),
		mine:       make(map[entryOf]bool),
	}
	for _, opt := range opts {
		opt(c)
	}
	if c.prefix == "" {
		return nil, fmt.Errorf("%w: empty key prefix (WithPrefix); tenure keys would mix with every other key", ErrInvalidConfig)
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c, nil
}

// Client returns the etcd client the coordinator uses.
func (c *Coordinator) Client() *clientv3.Client { return c.client }

// Prefix returns the etcd key prefix under which tenure keys live.
func (c *Coordinator) Prefix() string { return c.prefix }

// EtcdKey returns the etcd key that holds tenure key key.
func (c *Coordinator) EtcdKey(key string) string { return c.prefix + key }

// Close stops the coordinator's watches and, if it made its client (Dial),
// closes the client. It does not release grants: they expire on their own.
// Later calls return errors matching tenure.ErrClosed. Close is idempotent.
func (c *Coordinator) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
	if c.ownsClient {
		// clientv3's Close reports the cancellation of its own context.
		if err := c.client.Close(); err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("etcd: close client: %w", err)
		}
	}
	return nil
}

// begin checks that the coordinator is open and ctx has not ended.
func (c *Coordinator) begin(ctx context.Context, op string) error {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return fmt.Errorf("%s: %w", op, tenure.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// ttlSeconds is ttl rounded up to whole seconds, as etcd leases are.
func ttlSeconds(ttl time.Duration) int64 {
	return int64((ttl + time.Second - 1) / time.Second)
}

// Acquire grants key to holder with a lease of at least ttl (rounded up to
// whole seconds, and raised to etcd's minimum). See tenure.Coordinator.
//
// All keys of a holder hang on one shared lease, so the key is put on a
// lease that may have been granted or extended a while ago. The Grant's TTL
// is then the time that lease has left for sure, without asking etcd: its
// granted TTL minus the time since the grant or keepalive that last extended
// it was sent, measured on the boot clock from when this call began. etcd
// started that TTL no earlier than it received that request, so the lease
// lasts at least until then on etcd's clock; the caller, which sent its
// request before this call began, counts the reported TTL from its send
// time and so ends its term no later than the lease, by the time this call
// took to start at most. The report is truthful or conservative, never
// generous: this saves the keepalive round trip after the put on a handover.
// Only when the lease has less than half its TTL left is it extended after
// the put, and the TTL etcd returns for that keepalive (counted from after
// the call began) reported instead. A lease granted by this call reports
// its whole TTL.
//
// If a release handed key to holder on this coordinator's shared lease
// while holder waited in line (WatchAsCandidate), and no caller of this
// coordinator has been given that grant's token (nor renewed or released
// it here), Acquire returns that grant, once: from what this coordinator's
// watch of the key saw, without a round trip, when it saw it. Otherwise, if
// holder already holds key, its grant is deleted and a new one is created
// with a new token; another holder that acquires the key in between wins,
// and Acquire then returns a *tenure.HeldError naming it.
//
// The token of a grant is its key's ModRevision: the revision of the write
// that granted it (a put, or a release's hand-off).
func (c *Coordinator) Acquire(ctx context.Context, key, holder string, ttl time.Duration) (tenure.Grant, error) {
	op := fmt.Sprintf("etcd: acquire %q for %q", key, holder)
	if err := tenure.ValidateKey(key); err != nil {
		return tenure.Grant{}, fmt.Errorf("%s: %w", op, err)
	}
	if err := tenure.ValidateHolder(holder); err != nil {
		return tenure.Grant{}, fmt.Errorf("%s: %w", op, err)
	}
	if err := tenure.ValidateTTL(ttl); err != nil {
		return tenure.Grant{}, fmt.Errorf("%s: %w", op, err)
	}
	if err := c.begin(ctx, op); err != nil {
		return tenure.Grant{}, err
	}
	ek := c.EtcdKey(key)
	sl := c.sharedLease(holder, ttlSeconds(ttl))
	start := boottime.Now() // after the caller sent its request
	if g, ok := c.claimSeen(key, holder, sl, start); ok {
		// A release handed the key to holder (WatchAsCandidate), and this
		// coordinator's watch saw it: no round trip.
		c.followLine()
		c.log.Debug("leadership handed over", "key", key, "holder", holder, "token", g.Token, "ttl", g.TTL)
		return g, nil
	}

	// A few attempts: the shared lease may expire under us (a new one is
	// granted), or we may first have to delete our own earlier grant.
	const attempts = 4
	var last error
	for range attempts {
		id, grantedTTL, left, err := sl.get(ctx, c.client, start)
		if err != nil {
			return tenure.Grant{}, fmt.Errorf("%s: grant lease: %w", op, err)
		}
		resp, err := c.client.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(ek), "=", 0)).
			Then(clientv3.OpPut(ek, holder, clientv3.WithLease(id))).
			Else(clientv3.OpGet(ek)).
			Commit()
		if isLeaseNotFound(err) {
			sl.drop(id)
			last = fmt.Errorf("lease %x expired", int64(id))
			continue
		}
		if err != nil {
			return tenure.Grant{}, fmt.Errorf("%s: %w", op, err)
		}
		if !resp.Succeeded {
			kvs := resp.Responses[0].GetResponseRange().Kvs
			if len(kvs) == 0 { // cannot happen: the compare saw the key
				last = fmt.Errorf("key %q vanished during the transaction", ek)
				continue
			}
			kv := kvs[0]
			if g, ok := c.claim(key, holder, kv, id, left); ok {
				// Handed to holder by a release: nobody has this token yet.
				if g2, err := c.extendIfShort(ctx, sl, g, id, grantedTTL, left); err != nil {
					// Nobody will act on it: release it with the
					// holder's next renewal, or when this campaign's
					// next Acquire supersedes it.
					c.orphan(g)
					return tenure.Grant{}, fmt.Errorf("%s: %w", op, err)
				} else if g = g2; g.TTL > 0 {
					c.followLine()
					return g, nil
				}
				last = fmt.Errorf("lease %x expired", int64(id))
				continue
			}
			if string(kv.Value) != holder {
				return tenure.Grant{}, fmt.Errorf("%s: %w", op, &tenure.HeldError{Key: key, Holder: string(kv.Value), Token: uint64(kv.ModRevision)})
			}
			// Our own earlier grant: end it, then acquire anew.
			if _, err := c.client.Txn(ctx).
				If(clientv3.Compare(clientv3.ModRevision(ek), "=", kv.ModRevision)).
				Then(clientv3.OpDelete(ek)).
				Commit(); err != nil {
				return tenure.Grant{}, fmt.Errorf("%s: supersede grant with token %d: %w", op, kv.ModRevision, err)
			}
			last = fmt.Errorf("superseding own grant with token %d", kv.ModRevision)
			continue
		}
		g := tenure.Grant{Key: key, Holder: holder, Token: uint64(resp.Header.Revision), TTL: left.Truncate(time.Millisecond)}
		c.granted(key, g.Token)
		extended, err := c.extendIfShort(ctx, sl, g, id, grantedTTL, left)
		if err != nil {
			c.orphan(g) // the caller gets an error and never acts on g
			return tenure.Grant{}, fmt.Errorf("%s: %w", op, err)
		}
		g = extended
		if g.TTL == 0 {
			last = fmt.Errorf("lease %x expired", int64(id))
			continue
		}
		c.followLine()
		c.log.Debug("leadership granted", "key", key, "holder", holder, "token", g.Token, "ttl", g.TTL, "lease", fmt.Sprintf("%x", int64(id)))
		return g, nil
	}
	return tenure.Grant{}, fmt.Errorf("%s: gave up after %d attempts: %v", op, attempts, last)
}

// extendIfShort returns g, extended first when its lease id has less than
// half its TTL left: it then keeps the lease alive (one more round trip), so
// that the new term is not cut short, and reports the TTL etcd returns,
// counted from after the call began. A lease that expired meanwhile, taking
// the key with it, is dropped and reported with a TTL of 0.
func (c *Coordinator) extendIfShort(ctx context.Context, sl *sharedLease, g tenure.Grant, id clientv3.LeaseID, grantedTTL, left time.Duration) (tenure.Grant, error) {
	if left >= grantedTTL/2 {
		return g, nil
	}
	sent := boottime.Now()
	ka, err := c.client.KeepAliveOnce(ctx, id)
	if isLeaseNotFound(err) {
		sl.drop(id)
		g.TTL = 0
		return g, nil
	}
	if err != nil {
		return tenure.Grant{}, fmt.Errorf("extend lease %x after granting token %d (outcome unknown): %w", int64(id), g.Token, err)
	}
	g.TTL = time.Duration(ka.TTL) * time.Second
	sl.extended(id, sent, g.TTL)
	return g, nil
}

// Release deletes g's key if g is still the live grant on it. A grant that
// is already gone is not an error. The holder's shared lease is left alone:
// its other keys stay held.
//
// When a candidate waits in line for the key (WatchAsCandidate, seen by this
// coordinator's watch of the line), Release hands the key to the one that
// has waited longest instead, in the same single transaction: the key is
// put with the candidate's holder on the candidate's lease, with a new
// token. If the candidate has left meanwhile, the key is deleted.
func (c *Coordinator) Release(ctx context.Context, g tenure.Grant) error {
	op := fmt.Sprintf("etcd: release %s", g)
	if err := g.Validate(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	c.granted(g.Key, g.Token) // a caller held it: never hand it out

	if err := c.begin(ctx, op); err != nil {
		if !errors.Is(err, tenure.ErrClosed) {
			c.orphan(g)
		}
		return err
	}
	if e, ok := c.line.first(g.Key, g.Holder); ok {
		handed, err := c.handOff(ctx, g, e)
		switch {
		case handed:
			c.adopted(g)
			return nil
		case isLeaseNotFound(err):
			// The candidate's lease has just expired: release plainly.
			c.line.forget(e)
		case err != nil:
			c.orphan(g)
			return fmt.Errorf("%s: hand over to %q: %w (retried with the holder's next renewal)", op, e.holder, err)
		}
		// Not handed: the grant is gone, or the candidate has just left.
	}
	if err := c.deleteGrant(ctx, g); err != nil {
		c.orphan(g)
		return fmt.Errorf("%s: %w (retried with the holder's next renewal)", op, err)
	}
	c.adopted(g)
	return nil
}

// deleteGrant deletes g's key if g is still the live grant on it.
func (c *Coordinator) deleteGrant(ctx context.Context, g tenure.Grant) error {
	ek := c.EtcdKey(g.Key)
	_, err := c.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(ek), "=", int64(g.Token)),
			clientv3.Compare(clientv3.Value(ek), "=", g.Holder)).
		Then(clientv3.OpDelete(ek)).
		Commit()
	return err
}

// Leader returns the live grant on key, with the TTL of its lease as
// granted. See tenure.Coordinator.
//
// A lease that has just expired keeps its key until etcd deletes it, a
// moment later; Leader reports such a key as held (Acquire refuses it too),
// with TTL 0.
func (c *Coordinator) Leader(ctx context.Context, key string) (tenure.Grant, bool, error) {
	op := fmt.Sprintf("etcd: leader of %q", key)
	if err := tenure.ValidateKey(key); err != nil {
		return tenure.Grant{}, false, fmt.Errorf("%s: %w", op, err)
	}
	if err := c.begin(ctx, op); err != nil {
		return tenure.Grant{}, false, err
	}
	resp, err := c.client.Get(ctx, c.EtcdKey(key))
	if err != nil {
		return tenure.Grant{}, false, fmt.Errorf("%s: %w", op, err)
	}
	if len(resp.Kvs) == 0 {
		return tenure.Grant{}, false, nil
	}
	kv := resp.Kvs[0]
	g := tenure.Grant{Key: key, Holder: string(kv.Value), Token: uint64(kv.ModRevision)}
	if g.TTL, err = c.leaseTTL(ctx, clientv3.LeaseID(kv.Lease)); err != nil {
		return tenure.Grant{}, false, fmt.Errorf("%s: %w", op, err)
	}
	return g, true, nil
}

// leaseTTL returns the TTL lease id was granted with, 0 if it has expired or
// the key has no lease.
func (c *Coordinator) leaseTTL(ctx context.Context, id clientv3.LeaseID) (time.Duration, error) {
	if id == clientv3.NoLease {
		return 0, nil
	}
	r, err := c.client.TimeToLive(ctx, id)
	if isLeaseNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("lease %x: %w", int64(id), err)
	}
	if r.TTL < 0 { // -1: expired (remaining TTLs are rounded down: 0 is live)
		return 0, nil
	}
	return time.Duration(r.GrantedTTL) * time.Second, nil
}
