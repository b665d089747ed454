package etcd

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
)

// A lease is an etcd lease as granted or last extended: etcd starts its TTL
// no earlier than it receives the request, so it lasts at least until
// sent + ttl on etcd's clock.
type lease struct {
	id   clientv3.LeaseID
	ttl  time.Duration  // as etcd granted it (whole seconds, at least its minimum)
	sent tenure.Instant // when the request that granted or extended it was sent
}

// grantLease grants a new lease of secs seconds.
func (c *Coordinator) grantLease(ctx context.Context, secs int64) (lease, error) {
	sent := tenure.Now()
	resp, err := c.client.Grant(ctx, secs)
	if err != nil {
		return lease{}, fmt.Errorf("grant lease: %w", err)
	}
	return lease{id: resp.ID, ttl: time.Duration(resp.TTL) * time.Second, sent: sent}, nil
}

// spareKey names a lease granted ahead: for one key, one holder, one TTL.
type spareKey struct {
	key, holder string
	secs        int64
}

// keepSpare keeps l for holder's next Acquire of key, so that it takes the
// key in one transaction: l was granted for an Acquire that found key held,
// or carried holder's grant on key until its Release. No key is attached to
// a spare lease (the put that tried it failed, or the key was deleted), and
// nothing extends it: it expires on its own if it is not used.
func (c *Coordinator) keepSpare(key, holder string, secs int64, l lease) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, old := range c.spares { // too old to use: forget them
		if !fresh(old) {
			delete(c.spares, k)
		}
	}
	c.spares[spareKey{key, holder, secs}] = l
}

// fresh reports whether lease l has at least two thirds of its TTL left,
// as its last grant or extension was sent: enough to start a term on.
func fresh(l lease) bool { return l.sent.Add(l.ttl/3).Until() > 0 }

// leaseFor returns a lease for holder's Acquire of key: the spare kept for
// it, taken so that no other Acquire uses it, when it is fresh; a new one
// otherwise.
func (c *Coordinator) leaseFor(ctx context.Context, key, holder string, secs int64) (lease, error) {
	k := spareKey{key, holder, secs}
	c.mu.Lock()
	l, ok := c.spares[k]
	delete(c.spares, k)
	c.mu.Unlock()
	if ok && fresh(l) {
		return l, nil
	}
	return c.grantLease(ctx, secs)
}

// leaseTTL returns the TTL lease id was granted with and the time it has
// left (whole seconds, rounded down, as etcd reports it); granted 0 and left
// -1 when it has expired or id is NoLease.
func (c *Coordinator) leaseTTL(ctx context.Context, id clientv3.LeaseID) (granted, left time.Duration, err error) {
	if id == clientv3.NoLease {
		return 0, -1, nil
	}
	r, err := c.client.TimeToLive(ctx, id)
	switch {
	case isLeaseNotFound(err):
		return 0, -1, nil
	case err != nil:
		return 0, 0, fmt.Errorf("lease %x: %w", int64(id), err)
	case r.TTL < 0: // -1: expired (remaining TTLs are rounded down: 0 is live)
		return 0, -1, nil
	}
	return time.Duration(r.GrantedTTL) * time.Second, time.Duration(r.TTL) * time.Second, nil
}
