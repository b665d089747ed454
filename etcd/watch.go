package etcd

import (
	"context"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
)

// Watch sends key's current leadership, then every change: a new grant
// (Held, with its TTL as granted) or the key's release or expiry. Events are
// coalesced: a reader that falls behind receives the latest. The channel is
// closed when ctx ends, the coordinator is closed, or the watch fails (etcd
// compacted the revision it needed, or the member lost its raft leader: the
// watch requires one, so that a partitioned member cannot hide changes). See
// tenure.Coordinator.
func (c *Coordinator) Watch(ctx context.Context, key string) (<-chan tenure.LeaderEvent, error) {
	op := fmt.Sprintf("etcd: watch %q", key)
	if err := c.begin(ctx, op, tenure.ValidateKey(key)); err != nil {
		return nil, err
	}
	ek := c.EtcdKey(key)
	resp, err := c.client.Get(ctx, ek)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	first, err := c.eventOf(ctx, key, firstKV(resp.Kvs))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	out := make(chan tenure.LeaderEvent, 1)
	out <- first
	err = c.follow(ctx, ek, resp.Header.Revision, func(ctx context.Context, evs []*clientv3.Event) bool {
		kv := evs[len(evs)-1].Kv
		if evs[len(evs)-1].Type == mvccpb.DELETE {
			kv = nil
		}
		ev, err := c.eventOf(ctx, key, kv)
		if err == nil {
			latest(out, ev)
		}
		return err == nil
	}, func() { close(out) }, clientv3.WithProgressNotify())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return out, nil
}

// WatchMembers returns a channel that receives a value at once and then
// whenever group's membership changes after the call: a member joins,
// leaves (its lease revoked) or expires, as etcd puts or deletes its
// membership key. Values are coalesced. The channel is closed when ctx
// ends, when the coordinator is closed, or when the watch fails (as for
// Watch); callers then poll GroupMembers. See partition.MembersWatcher.
func (c *Coordinator) WatchMembers(ctx context.Context, group string) (<-chan struct{}, error) {
	op := fmt.Sprintf("etcd: watch members of %q", group)
	if err := c.begin(ctx, op, tenure.ValidateKey(group)); err != nil {
		return nil, err
	}
	// Watch from the revision now, so that no change after this call is
	// missed however long etcd takes to set the watch up.
	resp, err := c.client.Get(ctx, c.membersKey(group), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	out := make(chan struct{}, 1)
	out <- struct{}{} // read the membership now
	err = c.follow(ctx, c.membersKey(group), resp.Header.Revision, func(context.Context, []*clientv3.Event) bool {
		latest(out, struct{}{})
		return true
	}, func() { close(out) }, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return out, nil
}

// follow watches etcd key ek (with opts) from the revision after rev, in a
// goroutine that Close waits for: each is called with the events of every
// response that has some, until it returns false, ctx ends, the coordinator
// is closed or the watch fails; then done is called. The watch requires a
// raft leader.
func (c *Coordinator) follow(ctx context.Context, ek string, rev int64, each func(context.Context, []*clientv3.Event) bool, done func(), opts ...clientv3.OpOption) error {
	wctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.ctx, cancel) // Close ends the watch
	c.mu.Lock()
	if c.closed { // Close has begun and may be waiting: do not add to wg
		c.mu.Unlock()
		stop()
		cancel()
		return tenure.ErrClosed
	}
	c.wg.Add(1)
	c.mu.Unlock()
	wch := c.client.Watch(clientv3.WithRequireLeader(wctx), ek, append(opts, clientv3.WithRev(rev+1))...)
	go func() {
		defer c.wg.Done()
		defer done()
		defer stop()
		defer cancel()
		for {
			// Not a range over wch: clientv3 closes it only once its
			// stream goroutine has noticed the cancel, which waits for as
			// long as a retry of that stream waits for a connection (seen:
			// minutes, with Close waiting on this goroutine all along).
			var wr clientv3.WatchResponse
			var open bool
			select {
			case <-wctx.Done():
				return
			case wr, open = <-wch:
			}
			if !open {
				return
			}
			if wr.Canceled || wr.Err() != nil {
				if wctx.Err() == nil {
					c.log.Info("watch failed", "key", ek, "err", wr.Err())
				}
				return
			}
			if len(wr.Events) > 0 && !each(wctx, wr.Events) {
				return
			}
		}
	}()
	return nil
}

// latest puts v in out, a channel of one slot that only the caller
// writes, in place of a value not read yet: a slow reader gets the latest.
func latest[T any](out chan T, v T) {
	select {
	case <-out:
	default:
	}
	out <- v
}

// eventOf describes key as etcd holds it: kv, or nil when key is free. A
// held key's TTL is the one its lease was granted with, 0 when the lease has
// just expired (a delete event follows).
func (c *Coordinator) eventOf(ctx context.Context, key string, kv *mvccpb.KeyValue) (tenure.LeaderEvent, error) {
	if kv == nil {
		return tenure.LeaderEvent{Key: key}, nil
	}
	ttl, _, err := c.leaseTTL(ctx, clientv3.LeaseID(kv.Lease))
	g := tenure.Grant{Key: key, Holder: string(kv.Value), Token: uint64(kv.ModRevision), TTL: ttl}
	return tenure.LeaderEvent{Key: key, Held: true, Grant: g}, err
}
