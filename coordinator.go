package tenure

import (
	"context"
	"fmt"
	"time"
)

// A Grant is one leadership tenure of one holder over one key, as the
// coordinator granted or last renewed it (Term.Grant, and a Coordinator's
// calls).
type Grant struct {
	// Key is the name of what is led.
	Key string
	// Holder is the identity the grant was made to.
	Holder string
	// Token is the fencing token: greater than every token granted before for
	// this key, never reused, durable across coordinator restarts.
	Token uint64
	// TTL is the lease the coordinator actually granted, on its own clock,
	// counted from no earlier than Sent. Coordinators that round or raise
	// TTLs (etcd has a minimum) report the real value; a holder's local
	// deadline never assumes more.
	TTL time.Duration
	// Sent is when the request that last started or extended this grant's
	// lease was sent (read with Now just before sending it): the lease's
	// whole age counts from here, even when it was started before the call
	// that returned the grant. The holder's local deadline is
	// Sent + TTL·(1 − Config.MaxDrift) − Config.Margin. Set by Acquire and
	// Renew; zero in grants that were read rather than granted (Leader,
	// Watch, List).
	Sent Instant
}

// String formats the grant for logs.
func (g Grant) String() string {
	return fmt.Sprintf("%s@%d by %q (ttl %s)", g.Key, g.Token, g.Holder, g.TTL)
}

// Validate reports whether g can have come from a coordinator.
func (g Grant) Validate() error {
	if err := ValidateKey(g.Key); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidGrant, err)
	}
	if err := ValidateHolder(g.Holder); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidGrant, err)
	}
	if g.Token == 0 {
		return fmt.Errorf("%w: key %q has token 0", ErrInvalidGrant, g.Key)
	}
	return nil
}

// A Coordinator holds leases on keys and grants them with fencing tokens.
// Implementations: memory.Coordinator, etcd.Coordinator,
// postgres.Coordinator, kube.Coordinator. Every implementation passes
// tenuretest.RunCoordinatorTests.
//
// All methods are safe for concurrent use. A call whose context ends returns
// an error wrapping the context's error; its outcome at the coordinator is then
// unknown (it may or may not have been applied), which callers must allow for.
type Coordinator interface {
	// Acquire grants key to holder with a lease of ttl if the key is free or
	// its lease has expired on the coordinator's clock, with a new token
	// greater than every token granted for key before.
	//
	// If another holder has a live lease, Acquire returns a *HeldError naming
	// it (matching ErrHeld) and changes nothing. If holder itself holds the
	// key, Acquire supersedes that grant with a new one and a new token (on
	// backends where superseding takes two steps, another holder may win in
	// between, and Acquire then returns a *HeldError). An Acquire whose
	// outcome is unknown (its context ended, or its reply was lost) may have
	// been granted: the Elector simply acquires again with the same holder,
	// which supersedes it.
	// Malformed keys, holders and TTLs are rejected with errors wrapping
	// ErrInvalidKey, ErrInvalidHolder or ErrInvalidTTL.
	Acquire(ctx context.Context, key, holder string, ttl time.Duration) (Grant, error)

	// Renew extends a live grant from now on the coordinator's clock by the
	// TTL the coordinator granted it, and returns it with that TTL and the
	// Sent of this renewal. A grant that expired, was released or was
	// superseded is reported with an error wrapping ErrLost and is never
	// revived. A grant whose holder or token does not match the live one
	// (forged, or from an earlier tenure) cannot renew or release the live
	// one. Renewing one grant never extends another.
	Renew(ctx context.Context, g Grant) (Grant, error)

	// Release ends the grant now, so that another holder can acquire the key
	// without waiting for it to expire. Releasing a grant that is already
	// gone (expired, released, superseded) is not an error and changes
	// nothing.
	Release(ctx context.Context, g Grant) error

	// Leader returns the live grant on key. ok is false when nobody holds a
	// live lease on it. A lease that has just expired but that the
	// coordinator has not yet collected may be reported as held with a TTL
	// of zero, as long as Acquire still refuses it. The grant's TTL may be the lease remaining rather
	// than the TTL granted (PostgreSQL stores only the expiry). A malformed
	// key is rejected with an error wrapping ErrInvalidKey.
	Leader(ctx context.Context, key string) (g Grant, ok bool, err error)

	// Watch sends the key's current leadership first, then every change, so
	// that followers campaign the moment a key is released or expires
	// instead of on their next poll. The channel is closed when ctx ends or
	// the watch fails; callers fall back to polling, so correctness never
	// depends on an event arriving. Events may be coalesced: a slow reader
	// sees the latest state, not every change; a "free" event may repeat. A
	// malformed key is rejected with an error wrapping ErrInvalidKey.
	Watch(ctx context.Context, key string) (<-chan LeaderEvent, error)

	// List returns the live grant on every key that starts with prefix
	// (every key when prefix is empty), sorted by key, for status displays
	// and operators' tools. A listed grant's TTL is the time left on its
	// lease when it was read, on the coordinator's clock (etcd rounds it
	// down to whole seconds), not the TTL it was granted. A prefix with
	// characters no key may contain is rejected with an error wrapping
	// ErrInvalidKey.
	List(ctx context.Context, prefix string) ([]Grant, error)

	// Close releases the coordinator's resources (connections, sessions). It
	// does not release grants: they expire on their own. Close is
	// idempotent; other calls after Close fail with errors wrapping ErrClosed.
	Close() error
}

// LeaderEvent is one observation of a key's leadership.
type LeaderEvent struct {
	// Key is the key observed.
	Key string
	// Held is false when the key is free (released, expired or never held).
	Held bool
	// Grant is the live grant when Held is true.
	Grant Grant
}
