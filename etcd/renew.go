package etcd

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/boottime"
)

// maxTxnOps is how many keys one verification transaction reads: etcd's
// default --max-txn-ops.
const maxTxnOps = 128

// Renew extends g's lease: see RenewBatch.
func (c *Coordinator) Renew(ctx context.Context, g tenure.Grant) (tenure.Grant, error) {
	res, err := c.RenewBatch(ctx, []tenure.Grant{g})
	if err != nil {
		return tenure.Grant{}, err
	}
	return res[0].Grant, res[0].Err
}

// keepalive is the outcome of one KeepAliveOnce.
type keepalive struct {
	sent boottime.Instant // when it was sent, on the boot clock
	ttl  time.Duration    // granted TTL, from the response
	gone bool             // the lease has expired
	err  error            // the round trip failed: outcome unknown
}

// RenewBatch renews every grant in gs and returns one result per grant, in
// order. See tenure.BatchRenewer.
//
// It extends each holder's shared lease with one KeepAliveOnce, then checks
// in one transaction (per 128 keys) that every key still exists with its
// token, its holder and that lease. A grant is renewed with the TTL the
// keepalive returned, counted by etcd from after this call began; a grant
// whose key is gone or was recreated, or whose lease has expired, is
// reported lost (wrapping tenure.ErrLost). Grants made by another
// Coordinator, whose lease this one does not know, take two more round
// trips.
func (c *Coordinator) RenewBatch(ctx context.Context, gs []tenure.Grant) ([]tenure.RenewResult, error) {
	out := make([]tenure.RenewResult, len(gs))
	if len(gs) == 0 {
		return out, nil
	}
	op := "etcd: renew"
	if len(gs) == 1 {
		op = fmt.Sprintf("etcd: renew %s", gs[0])
	}
	if err := c.begin(ctx, op); err != nil {
		return nil, err
	}

	var todo []int // indices of valid grants
	owners := make(map[clientv3.LeaseID]*sharedLease)
	for i, g := range gs {
		if err := g.Validate(); err != nil {
			out[i].Err = fmt.Errorf("etcd: renew %s: %w", g, err)
			continue
		}
		// A caller holds this token: never hand it out (handoff.go).
		c.granted(g.Key, g.Token)
		todo = append(todo, i)
		for id, sl := range c.leasesOf(g.Holder, g.TTL) {
			owners[id] = sl
		}
	}
	if len(todo) == 0 {
		return out, nil
	}

	// 0. Release what failed to release before, so that extending the
	// shared leases does not keep those keys alive; 1. extend the shared
	// leases; 2. check the keys.
	c.releaseOrphans(ctx, gs)
	ka := c.keepAlive(ctx, keys(owners))
	for id, r := range ka {
		switch {
		case r.gone:
			owners[id].drop(id)
			c.log.Info("shared lease expired", "lease", fmt.Sprintf("%x", int64(id)))
		case r.err == nil:
			owners[id].extended(id, r.sent, r.ttl)
		}
	}
	kvs, err := c.getKeys(ctx, gs, todo)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	var slow []int // grants on a lease this coordinator does not know
	var ids []clientv3.LeaseID
	seen := make(map[clientv3.LeaseID]bool)
	for j, i := range todo {
		if !c.classify(&out[i], gs[i], kvs[j], ka) {
			slow = append(slow, i)
			if id := clientv3.LeaseID(kvs[j].Lease); !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	if len(slow) == 0 {
		return out, nil
	}

	// The slow path: keep alive the leases the keys are on, then check the
	// keys again, since they may have gone before the keepalive.
	ka2 := c.keepAlive(ctx, ids)
	kvs2, err := c.getKeys(ctx, gs, slow)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	for j, i := range slow {
		if !c.classify(&out[i], gs[i], kvs2[j], ka2) {
			out[i].Err = fmt.Errorf("etcd: renew %s: key moved to another lease during renewal; outcome unknown", gs[i])
			continue
		}
		if out[i].Err == nil {
			lease := clientv3.LeaseID(kvs2[j].Lease)
			c.sharedLease(gs[i].Holder, ttlSeconds(out[i].Grant.TTL)).adopt(lease, ka2[lease].sent, out[i].Grant.TTL)
		}
	}
	return out, nil
}

func keys(m map[clientv3.LeaseID]*sharedLease) []clientv3.LeaseID {
	out := make([]clientv3.LeaseID, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	return out
}

// classify sets r from the state of g's key, read after the keepalives in
// ka. It returns false, leaving r alone, when the key is on a lease that ka
// has no outcome for.
func (c *Coordinator) classify(r *tenure.RenewResult, g tenure.Grant, kv *mvccpb.KeyValue, ka map[clientv3.LeaseID]keepalive) bool {
	lost := func(why string, args ...any) bool {
		r.Err = fmt.Errorf("etcd: renew %s: %w: %s", g, tenure.ErrLost, fmt.Sprintf(why, args...))
		return true
	}
	switch {
	case kv == nil:
		return lost("key is free")
	case uint64(kv.ModRevision) != g.Token:
		return lost("key now held by %q with token %d", kv.Value, kv.ModRevision)
	case string(kv.Value) != g.Holder:
		return lost("key with token %d is held by %q", kv.ModRevision, kv.Value)
	case kv.Lease == int64(clientv3.NoLease):
		r.Err = fmt.Errorf("etcd: renew %s: key has no lease (not written by tenure?)", g)
		return true
	}
	k, ok := ka[clientv3.LeaseID(kv.Lease)]
	switch {
	case !ok:
		return false
	case k.err != nil:
		r.Err = fmt.Errorf("etcd: renew %s: keepalive of lease %x (outcome unknown): %w", g, kv.Lease, k.err)
	case k.gone:
		return lost("lease %x expired", kv.Lease)
	default:
		r.Grant = g
		r.Grant.TTL = k.ttl
	}
	return true
}

// keepAlive sends one KeepAliveOnce for each lease, concurrently.
func (c *Coordinator) keepAlive(ctx context.Context, ids []clientv3.LeaseID) map[clientv3.LeaseID]keepalive {
	out := make(map[clientv3.LeaseID]keepalive, len(ids))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			k := keepalive{sent: boottime.Now()}
			resp, err := c.client.KeepAliveOnce(ctx, id)
			switch {
			case isLeaseNotFound(err):
				k.gone = true
			case err != nil:
				k.err = err
			default:
				k.ttl = time.Duration(resp.TTL) * time.Second
			}
			mu.Lock()
			out[id] = k
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// getKeys reads the keys of gs[idx...] in as few transactions as etcd
// allows and returns them in the same order, nil for a missing key.
func (c *Coordinator) getKeys(ctx context.Context, gs []tenure.Grant, idx []int) ([]*mvccpb.KeyValue, error) {
	out := make([]*mvccpb.KeyValue, 0, len(idx))
	for start := 0; start < len(idx); start += maxTxnOps {
		chunk := idx[start:min(start+maxTxnOps, len(idx))]
		ops := make([]clientv3.Op, len(chunk))
		for j, i := range chunk {
			ops[j] = clientv3.OpGet(c.EtcdKey(gs[i].Key))
		}
		resp, err := c.client.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			return nil, err
		}
		for _, r := range resp.Responses {
			var kv *mvccpb.KeyValue
			if kvs := r.GetResponseRange().Kvs; len(kvs) > 0 {
				kv = kvs[0]
			}
			out = append(out, kv)
		}
	}
	return out, nil
}
