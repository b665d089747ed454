package etcd

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
)

// WatchMembers returns a channel that receives a value at once and then
// whenever group's membership changes after the call: a member joins,
// leaves (its lease revoked) or expires, as etcd puts or deletes its
// membership key. Values are coalesced. The channel is closed when ctx ends, when the coordinator
// is closed, or when the watch fails (etcd compacted the revision it
// needed, or the member it talks to lost its raft leader); callers then
// poll GroupMembers. See partition.MembersWatcher.
func (c *Coordinator) WatchMembers(ctx context.Context, group string) (<-chan struct{}, error) {
	op := fmt.Sprintf("etcd: watch members of %q", group)
	if err := tenure.ValidateKey(group); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if err := c.begin(ctx, op); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.ctx, cancel) // Close ends the watch
	c.mu.Lock()
	if c.closed { // Close has begun and may be waiting: do not add to wg
		c.mu.Unlock()
		stop()
		cancel()
		return nil, fmt.Errorf("%s: %w", op, tenure.ErrClosed)
	}
	c.wg.Add(1)
	c.mu.Unlock()
	// Watch from the revision now, so that no change after this call is
	// missed however long etcd takes to set the watch up.
	resp, err := c.client.Get(wctx, c.membersKey(group), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		c.wg.Done()
		stop()
		cancel()
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	wch := c.client.Watch(clientv3.WithRequireLeader(wctx), c.membersKey(group), clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
	out := make(chan struct{}, 1)
	out <- struct{}{} // read the membership now
	go func() {
		defer c.wg.Done()
		defer close(out)
		defer stop()
		defer cancel()
		for {
			select {
			case wr, ok := <-wch:
				if !ok || wr.Canceled || wr.Err() != nil {
					if err := wr.Err(); err != nil && wctx.Err() == nil {
						c.log.Info("members watch failed", "group", group, "err", err)
					}
					return
				}
				if len(wr.Events) > 0 {
					select {
					case out <- struct{}{}:
					default:
					}
				}
			case <-wctx.Done():
				return
			}
		}
	}()
	return out, nil
}
