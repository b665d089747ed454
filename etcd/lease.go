package etcd

import (
	"context"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure/internal/boottime"
)

// leaseKey identifies a shared lease: one per holder and requested TTL.
type leaseKey struct {
	holder string
	secs   int64 // requested TTL, whole seconds
}

// sharedLease is the etcd lease that all keys of one holder with one TTL are
// attached to. Its mutex is held while granting, so that concurrent
// acquisitions share one grant.
type sharedLease struct {
	key leaseKey

	mu  sync.Mutex
	id  clientv3.LeaseID // NoLease until granted, and after it expired
	ttl time.Duration    // as granted by etcd
	// sent is when the request that last extended the lease (its grant, or
	// a keepalive whose reply said it was extended) was sent, on the boot
	// clock. etcd starts a lease's TTL no earlier than it receives that
	// request, so the lease lasts at least until sent+ttl on etcd's clock.
	sent boottime.Instant
	// adopted is true while id was granted by another Coordinator (see
	// adopt): this one never waits in line on it (handoff.go).
	adopted bool
}

// sharedLease returns the shared lease entry of holder for TTL secs.
func (c *Coordinator) sharedLease(holder string, secs int64) *sharedLease {
	k := leaseKey{holder, secs}
	c.mu.Lock()
	defer c.mu.Unlock()
	sl := c.leases[k]
	if sl == nil {
		sl = &sharedLease{key: k}
		c.leases[k] = sl
	}
	return sl
}

// get returns the current lease, granting one if there is none, and the
// time it has left for sure, counted from start: its granted TTL minus the
// time since the request that last extended it was sent (the whole TTL for a
// lease granted by this call, which began after start). A lease whose last
// extension was sent before a suspend of the host has that suspend counted
// against it, because start and sent are read on the boot clock.
func (sl *sharedLease) get(ctx context.Context, client *clientv3.Client, start boottime.Instant) (id clientv3.LeaseID, ttl, left time.Duration, err error) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.id != clientv3.NoLease {
		return sl.id, sl.ttl, sl.ttl - max(start.Sub(sl.sent), 0), nil
	}
	sent := boottime.Now()
	resp, err := client.Grant(ctx, sl.key.secs)
	if err != nil {
		return 0, 0, 0, err
	}
	sl.id, sl.ttl, sl.sent, sl.adopted = resp.ID, time.Duration(resp.TTL)*time.Second, sent, false
	return sl.id, sl.ttl, sl.ttl, nil
}

// extended records that a keepalive of lease id sent at sent was answered
// with ttl: the lease now lasts at least until sent+ttl. An older reply
// arriving late never moves sent backwards.
func (sl *sharedLease) extended(id clientv3.LeaseID, sent boottime.Instant, ttl time.Duration) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.id == id && sent > sl.sent {
		sl.sent, sl.ttl = sent, ttl
	}
}

// current returns the lease's id and granted TTL, NoLease if none.
func (sl *sharedLease) current() (clientv3.LeaseID, time.Duration) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	return sl.id, sl.ttl
}

// snapshot returns the lease's id (NoLease if none), granted TTL, and when
// the request that last extended it was sent.
func (sl *sharedLease) snapshot() (clientv3.LeaseID, time.Duration, boottime.Instant) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	return sl.id, sl.ttl, sl.sent
}

// isAdopted reports whether lease id was adopted from another Coordinator.
func (sl *sharedLease) isAdopted(id clientv3.LeaseID) bool {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	return sl.id == id && sl.adopted
}

// drop forgets lease id after etcd reported it gone; the next get grants a
// new one.
func (sl *sharedLease) drop(id clientv3.LeaseID) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.id == id {
		sl.id, sl.ttl = clientv3.NoLease, 0
	}
}

// adopt makes id the shared lease if there is none, so that a grant made by
// another Coordinator (before a restart of this process) is renewed on the
// fast path from now on. sent is when the keepalive that extended it by ttl
// was sent.
func (sl *sharedLease) adopt(id clientv3.LeaseID, sent boottime.Instant, ttl time.Duration) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.id == clientv3.NoLease {
		sl.id, sl.ttl, sl.sent, sl.adopted = id, ttl, sent, true
	}
}

// leasesOf returns the shared leases of holder that a grant of ttl may be
// on, with their ids: those granted ttl, and those granted up to twice ttl,
// since Acquire reports the time a shared lease has left, never less than
// half its TTL. Extending a lease of another of the holder's grants by
// mistake only makes that grant last longer.
func (c *Coordinator) leasesOf(holder string, ttl time.Duration) map[clientv3.LeaseID]*sharedLease {
	c.mu.Lock()
	var candidates []*sharedLease
	for k, sl := range c.leases {
		if k.holder == holder {
			candidates = append(candidates, sl)
		}
	}
	c.mu.Unlock()
	out := make(map[clientv3.LeaseID]*sharedLease)
	for _, sl := range candidates {
		if id, t := sl.current(); id != clientv3.NoLease && t/2 <= ttl && ttl <= t {
			out[id] = sl
		}
	}
	return out
}
