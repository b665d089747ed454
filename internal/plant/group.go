package plant

import (
	"context"
	"sync"
	"time"

	"github.com/tenure-dev/tenure/internal/timing"

	"github.com/tenure-dev/tenure/partition"

	"github.com/tenure-dev/tenure"
)

// Group is a coordinator that can run partition groups: what package
// partition needs below a Group member.
type Group = partition.Coordinator

// GroupPassthrough is a base for group coordinator wrappers: it forwards
// every call to the Group it embeds.
type GroupPassthrough struct{ Group }

// WatchMembers forwards to the embedded Group when it watches its
// membership (etcd, PostgreSQL), so that members under a planted bug or a
// recorder wake on joins and leaves as they do without them. Over a Group
// that cannot watch, it returns a channel that never fires and is closed
// when ctx ends: the member polls, as it would without the wrapper.
func (p GroupPassthrough) WatchMembers(ctx context.Context, group string) (<-chan struct{}, error) {
	if w, ok := p.Group.(partition.MembersWatcher); ok {
		return w.WatchMembers(ctx, group)
	}
	ch := make(chan struct{})
	context.AfterFunc(ctx, func() { close(ch) })
	return ch, nil
}

// WrapGroup returns c with bug planted for a partition group member
// configured with cfg (the member's lease settings); any other bug name,
// NoToken (a writer's bug) and the clock plants return c unchanged. The bugs are the
// Elector's, moved to the membership whose lease every owned partition
// shares:
//
//   - ReplyDeadline: the membership's Sent is read when the reply to the
//     join or renewal arrives, so every partition's local deadline is
//     measured from the reply;
//   - NoMargin: the membership's TTL is inflated so that
//     TTL'·(1−MaxDrift) − Margin equals the real TTL;
//   - RenewAfterExpiry: a membership renewal that fails or reports the
//     membership lost (or takes longer than two retry periods) is reported
//     done, and so is the check of the partitions owned that follows it
//     (reporting none lost), so the member's partitions carry on past their
//     lease while other members claim them.
//
// As for Wrap, only what the member sees is bent: calls handed back to the
// coordinator carry the TTL it really granted.
func WrapGroup(c Group, bug string, cfg tenure.Config) Group {
	switch bug {
	case ReplyDeadline:
		return bentGroup{GroupPassthrough{c}, newBent(), func(m partition.Member) partition.Member {
			m.Sent = tenure.Now()
			return m
		}}
	case NoMargin:
		return bentGroup{GroupPassthrough{c}, newBent(), func(m partition.Member) partition.Member {
			m.TTL = time.Duration(float64(m.TTL+cfg.Margin) / (1 - cfg.MaxDrift))
			return m
		}}
	case RenewAfterExpiry:
		return renewMemberAfterExpiry{GroupPassthrough{c}, cfg, &faked{epochs: map[uint64]bool{}}}
	default:
		return c
	}
}

// bentGroup reports memberships as bend returns them, and hands the TTL
// the coordinator really granted back to it.
type bentGroup struct {
	GroupPassthrough
	b    *bent
	bend func(m partition.Member) partition.Member
}

// bent records m's real TTL under its epoch and returns m as the bug sees it.
func (c bentGroup) bent(m partition.Member) partition.Member {
	b := c.bend(m)
	c.b.bend(tenure.Grant{Token: m.Epoch, TTL: m.TTL}, b.TTL)
	return b
}

// unbend returns m with the TTL the coordinator really granted it.
func (c bentGroup) unbend(m partition.Member) partition.Member {
	m.TTL = c.b.unbend(tenure.Grant{Token: m.Epoch, TTL: m.TTL}).TTL
	return m
}

func (c bentGroup) JoinGroup(ctx context.Context, group, id string, ttl time.Duration, partitions int) (partition.Member, error) {
	m, err := c.Group.JoinGroup(ctx, group, id, ttl, partitions)
	if err != nil {
		return m, err
	}
	return c.bent(m), nil
}

func (c bentGroup) RenewMember(ctx context.Context, m partition.Member) (partition.Member, error) {
	r, err := c.Group.RenewMember(ctx, c.unbend(m))
	if err != nil {
		return r, err
	}
	return c.bent(r), nil
}

func (c bentGroup) LeaveGroup(ctx context.Context, m partition.Member) error {
	return c.Group.LeaveGroup(ctx, c.unbend(m))
}

func (c bentGroup) ClaimPartitions(ctx context.Context, m partition.Member, names []string) ([]partition.ClaimResult, error) {
	return c.Group.ClaimPartitions(ctx, c.unbend(m), names)
}

func (c bentGroup) CheckPartitions(ctx context.Context, m partition.Member, gs []tenure.Grant) ([]tenure.Grant, error) {
	return c.Group.CheckPartitions(ctx, c.unbend(m), gs)
}

func (c bentGroup) ReleasePartitions(ctx context.Context, m partition.Member, gs []tenure.Grant) error {
	return c.Group.ReleasePartitions(ctx, c.unbend(m), gs)
}

// renewMemberAfterExpiry reports every membership renewal done. As Wrap's
// renewal after expiry, it gives the real renewal at most two retry
// periods, so that the member's deadline moves on as often as a renewal
// that succeeded would move it.
type renewMemberAfterExpiry struct {
	GroupPassthrough
	cfg   tenure.Config
	faked *faked
}

// faked records the memberships whose last renewal renewMemberAfterExpiry
// reported done when it was not.
type faked struct {
	mu     sync.Mutex
	epochs map[uint64]bool
}

func (f *faked) set(epoch uint64, v bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.epochs[epoch] = v
}

func (f *faked) get(epoch uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.epochs[epoch]
}

// CheckPartitions reports nothing lost when the real check fails, and
// without asking after a renewal it reported done when it was not: the
// second half of a renewal reported done. (Asking would cost the member a
// round trip it may not have before its deadline: the partition runner
// makes other calls, which hang as long, between two renewals.)
func (c renewMemberAfterExpiry) CheckPartitions(ctx context.Context, m partition.Member, gs []tenure.Grant) ([]tenure.Grant, error) {
	if c.faked.get(m.Epoch) {
		return nil, nil
	}
	rctx, cancel := context.WithTimeout(ctx, 2*timing.RetryPeriod(c.cfg.TTL, c.cfg.RetryPeriod))
	defer cancel()
	if lost, err := c.Group.CheckPartitions(rctx, m, gs); err == nil {
		return lost, nil
	}
	return nil, nil
}

// GroupMembers gives a read of the membership at most two retry periods
// too: the member reads it on every round, and a read that hangs for a
// whole request timeout while the member is cut off could keep it from
// its next renewal (the one the bug reports done) until its deadline.
func (c renewMemberAfterExpiry) GroupMembers(ctx context.Context, group string) ([]partition.Member, error) {
	rctx, cancel := context.WithTimeout(ctx, 2*timing.RetryPeriod(c.cfg.TTL, c.cfg.RetryPeriod))
	defer cancel()
	return c.Group.GroupMembers(rctx, group)
}

func (c renewMemberAfterExpiry) RenewMember(ctx context.Context, m partition.Member) (partition.Member, error) {
	rctx, cancel := context.WithTimeout(ctx, 2*timing.RetryPeriod(c.cfg.TTL, c.cfg.RetryPeriod))
	defer cancel()
	if r, err := c.Group.RenewMember(rctx, m); err == nil {
		c.faked.set(m.Epoch, false)
		return r, nil
	}
	c.faked.set(m.Epoch, true)
	m.Sent = tenure.Now() // as if renewed just now
	return m, nil
}
