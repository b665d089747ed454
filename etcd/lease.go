package etcd

import (
	"context"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
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

// get returns the current lease, granting one if there is none. fresh
// reports that it was granted by this call, so that it lasts its TTL from
// after the call began.
func (sl *sharedLease) get(ctx context.Context, client *clientv3.Client) (id clientv3.LeaseID, ttl time.Duration, fresh bool, err error) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.id != clientv3.NoLease {
		return sl.id, sl.ttl, false, nil
	}
	resp, err := client.Grant(ctx, sl.key.secs)
	if err != nil {
		return 0, 0, false, err
	}
	sl.id, sl.ttl = resp.ID, time.Duration(resp.TTL)*time.Second
	return sl.id, sl.ttl, true, nil
}

// current returns the lease's id and granted TTL, NoLease if none.
func (sl *sharedLease) current() (clientv3.LeaseID, time.Duration) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	return sl.id, sl.ttl
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
// fast path from now on.
func (sl *sharedLease) adopt(id clientv3.LeaseID, ttl time.Duration) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.id == clientv3.NoLease {
		sl.id, sl.ttl = id, ttl
	}
}

// leasesOf returns the shared leases of holder whose granted TTL is ttl,
// with their ids.
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
		if id, t := sl.current(); id != clientv3.NoLease && t == ttl {
			out[id] = sl
		}
	}
	return out
}
