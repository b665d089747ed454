package etcd

import (
	"context"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
)

// Watch sends key's current leadership, then every change: a new grant
// (Held, with the grant's TTL as granted) and the key's release or expiry
// (not Held). See tenure.Watcher.
//
// Events are coalesced: a reader that falls behind receives the latest state,
// not every change. The channel is closed when ctx ends, when the
// coordinator is closed, or when the watch fails: etcd compacted the
// revision it needed, or the member it talks to lost its raft leader (the
// watch requires one, so that a partitioned member cannot hide changes).
func (c *Coordinator) Watch(ctx context.Context, key string) (<-chan tenure.LeaderEvent, error) {
	op := fmt.Sprintf("etcd: watch %q", key)
	if err := tenure.ValidateKey(key); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if err := c.begin(ctx, op); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.ctx, cancel) // Close ends the watch
	fail := func(err error) (<-chan tenure.LeaderEvent, error) {
		stop()
		cancel()
		return nil, fmt.Errorf("%s: %w", op, err)
	}

	ek := c.EtcdKey(key)
	resp, err := c.client.Get(wctx, ek)
	if err != nil {
		return fail(err)
	}
	first := tenure.LeaderEvent{Key: key}
	if len(resp.Kvs) > 0 {
		if first, err = c.event(wctx, key, resp.Kvs[0]); err != nil {
			return fail(err)
		}
	}
	wch := c.client.Watch(clientv3.WithRequireLeader(wctx), ek,
		clientv3.WithRev(resp.Header.Revision+1), clientv3.WithProgressNotify())

	out := make(chan tenure.LeaderEvent, 1)
	c.mu.Lock()
	if c.closed { // Close has begun and may be waiting: do not add to wg
		c.mu.Unlock()
		return fail(tenure.ErrClosed)
	}
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		defer close(out)
		defer stop()
		defer cancel()
		pending := &first
		for {
			var send chan<- tenure.LeaderEvent
			var ev tenure.LeaderEvent
			if pending != nil {
				send, ev = out, *pending
			}
			select {
			case send <- ev:
				pending = nil
			case wr, ok := <-wch:
				if !ok || wr.Canceled || wr.Err() != nil {
					if err := wr.Err(); err != nil && wctx.Err() == nil {
						c.log.Info("watch failed", "key", key, "err", err)
					}
					return
				}
				if len(wr.Events) == 0 { // progress notification
					continue
				}
				last := wr.Events[len(wr.Events)-1]
				if last.Type == mvccpb.DELETE {
					pending = &tenure.LeaderEvent{Key: key}
					continue
				}
				e, err := c.event(wctx, key, last.Kv)
				if err != nil {
					return
				}
				pending = &e
			case <-wctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// event describes a held key. The TTL is looked up from its lease; it is 0
// when the lease has just expired (a delete event follows).
func (c *Coordinator) event(ctx context.Context, key string, kv *mvccpb.KeyValue) (tenure.LeaderEvent, error) {
	ttl, err := c.leaseTTL(ctx, clientv3.LeaseID(kv.Lease))
	if err != nil {
		return tenure.LeaderEvent{}, err
	}
	return tenure.LeaderEvent{
		Key:  key,
		Held: true,
		Grant: tenure.Grant{
			Key: key, Holder: string(kv.Value), Token: uint64(kv.ModRevision), TTL: ttl,
		},
	}, nil
}
