package postgres

import (
	"context"
	"fmt"

	"github.com/tenure-dev/tenure/partition"

	"github.com/tenure-dev/tenure"
)

var _ partition.MembersWatcher = (*Coordinator)(nil)

// membersTopic is the notification payload, on the coordinator's channel,
// of a change in group's membership. It contains a '#', which no key may,
// so it never wakes a key's watchers.
func membersTopic(group string) string { return "#members/" + group }

// WatchMembers returns a channel that receives a value at once and then
// whenever a member joins or leaves group: JoinGroup and LeaveGroup notify
// on the coordinator's LISTEN/NOTIFY channel. A membership that expires
// notifies nobody; callers poll GroupMembers for those. Values are
// coalesced. The channel is closed when ctx ends or the coordinator is
// closed. See partition.MembersWatcher.
func (c *Coordinator) WatchMembers(ctx context.Context, group string) (<-chan struct{}, error) {
	if err := tenure.ValidateKey(group); err != nil {
		return nil, fmt.Errorf("postgres: watch members of %q: %w", group, err)
	}
	l, err := c.startWatcher()
	if err != nil {
		return nil, fmt.Errorf("postgres: watch members of %q: %w", group, err)
	}
	poke := make(chan struct{}, 1)
	unsubscribe := l.subscribe(membersTopic(group), poke)
	out := make(chan struct{}, 1)
	out <- struct{}{} // a first read; the caller's polling covers what happened before
	go func() {
		defer c.wg.Done()
		defer close(out)
		defer unsubscribe()
		ctx, end := c.watcherContext(ctx)
		defer end()
		for {
			select {
			case <-ctx.Done():
				return
			case <-poke:
				wake(out)
			}
		}
	}()
	return out, nil
}
