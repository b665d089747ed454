package memory

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/tenure-dev/tenure/internal/inputs"
	"github.com/tenure-dev/tenure/partition"

	"github.com/tenure-dev/tenure"
)

var _ partition.Coordinator = (*Coordinator)(nil)

// group is one partition group: its memberships and who owns which
// partition. A partition is owned while its owner's membership is live.
type group struct {
	members   map[uint64]*membership // by epoch: one ID may have several
	owners    map[string]uint64      // partition name → owning epoch
	nextEpoch uint64
}

// membership is one live (or expired, not yet collected) membership.
type membership struct {
	id         string
	epoch      uint64
	ttl        time.Duration
	expires    time.Duration // on the coordinator's clock
	partitions int           // as announced; 0 for none
}

func (m *membership) member(group string, ttl time.Duration) partition.Member {
	return partition.Member{Group: group, ID: m.id, Epoch: m.epoch, TTL: ttl, Partitions: m.partitions}
}

// groupLocked returns group g, creating it.
func (c *Coordinator) groupLocked(name string) *group {
	if c.groups == nil {
		c.groups = make(map[string]*group)
	}
	g := c.groups[name]
	if g == nil {
		g = &group{members: make(map[uint64]*membership), owners: make(map[string]uint64)}
		c.groups[name] = g
	}
	return g
}

// liveMemberLocked returns the live membership with epoch in g, or nil. An
// expired membership is collected with its partitions.
func (c *Coordinator) liveMemberLocked(g *group, epoch uint64, now time.Duration) *membership {
	m := g.members[epoch]
	if m != nil && m.expires <= now {
		delete(g.members, epoch)
		return nil
	}
	return m
}

// collectGroupLocked drops g's expired memberships.
func collectGroupLocked(g *group, now time.Duration) {
	for epoch, m := range g.members {
		if m.expires <= now {
			delete(g.members, epoch)
		}
	}
}

// JoinGroup makes id a member of group for ttl (raised to the minimum TTL)
// with a new epoch, announcing partitions; see partition.Coordinator. An
// earlier membership of id is left to expire or leave on its own, with its
// partitions, as on etcd and PostgreSQL. The call is subject to id's
// faults.
func (c *Coordinator) JoinGroup(ctx context.Context, group, id string, ttl time.Duration, partitions int) (partition.Member, error) {
	if err := inputs.Join(group, id, ttl, partitions); err != nil {
		return partition.Member{}, fmt.Errorf("memory: join group: %w", err)
	}
	ttl = max(ttl, c.minTTL)
	sent := tenure.Now()
	var m partition.Member
	err := c.call(ctx, []string{id}, func() error {
		g := c.groupLocked(group)
		if g.nextEpoch == math.MaxUint64 {
			return fmt.Errorf("epochs of group %q exhausted", group)
		}
		g.nextEpoch++
		ms := &membership{id: id, epoch: g.nextEpoch, ttl: ttl, expires: c.clock.now() + ttl, partitions: partitions}
		g.members[ms.epoch] = ms
		m = ms.member(group, ttl)
		m.Sent = sent
		return nil
	})
	if err != nil {
		return partition.Member{}, fmt.Errorf("memory: join group %q as %q: %w", group, id, err)
	}
	return m, nil
}

// RenewMember extends m's lease, and so all its partitions, by its TTL from
// now on the coordinator's clock. The call is subject to m.ID's faults.
func (c *Coordinator) RenewMember(ctx context.Context, m partition.Member) (partition.Member, error) {
	if err := validateMember(m); err != nil {
		return partition.Member{}, fmt.Errorf("memory: renew member: %w", err)
	}
	sent := tenure.Now()
	var r partition.Member
	err := c.call(ctx, []string{m.ID}, func() error {
		g := c.groupLocked(m.Group)
		ms := c.liveMemberLocked(g, m.Epoch, c.clock.now())
		if ms == nil || ms.id != m.ID {
			return fmt.Errorf("membership expired or left: %w", tenure.ErrLost)
		}
		ms.expires = c.clock.now() + ms.ttl
		r = ms.member(m.Group, ms.ttl)
		r.Sent = sent
		return nil
	})
	if err != nil {
		return partition.Member{}, fmt.Errorf("memory: renew member %s: %w", m, err)
	}
	return r, nil
}

// LeaveGroup ends m and frees its partitions. The call is subject to m.ID's
// faults.
func (c *Coordinator) LeaveGroup(ctx context.Context, m partition.Member) error {
	if err := validateMember(m); err != nil {
		return fmt.Errorf("memory: leave group: %w", err)
	}
	err := c.call(ctx, []string{m.ID}, func() error {
		g := c.groupLocked(m.Group)
		if ms := g.members[m.Epoch]; ms != nil && ms.id == m.ID {
			delete(g.members, m.Epoch)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("memory: leave %s: %w", m, err)
	}
	return nil
}

// GroupMembers returns group's live members, sorted by ID (and epoch, for
// memberships of one ID), each with the TTL it was granted. It has no
// holder: it is never faulted.
func (c *Coordinator) GroupMembers(ctx context.Context, group string) ([]partition.Member, error) {
	if err := tenure.ValidateKey(group); err != nil {
		return nil, fmt.Errorf("memory: group members: %w", err)
	}
	if err := c.observe(ctx); err != nil {
		return nil, fmt.Errorf("memory: members of %q: %w", group, err)
	}
	defer c.mu.Unlock()
	now := c.clock.now()
	g := c.groupLocked(group)
	collectGroupLocked(g, now)
	out := make([]partition.Member, 0, len(g.members))
	for _, ms := range g.members {
		out = append(out, ms.member(group, ms.ttl))
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].ID != out[j].ID {
			return out[i].ID < out[j].ID
		}
		return out[i].Epoch < out[j].Epoch
	})
	return out, nil
}

// observe checks ctx and that the coordinator is open, and returns with
// c.mu held when it reports nil.
func (c *Coordinator) observe(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return tenure.ErrClosed
	}
	return nil
}

// liveEpochsLocked returns g's live memberships by epoch.
func liveEpochsLocked(g *group, now time.Duration) map[uint64]*membership {
	collectGroupLocked(g, now)
	out := make(map[uint64]*membership, len(g.members))
	for _, ms := range g.members {
		out[ms.epoch] = ms
	}
	return out
}

// ClaimPartitions claims the named partitions of m's group for m; see
// partition.Coordinator. A claimed
// partition's token is one greater than the last token granted on its key.
// A partition whose key has a live single-key grant (Acquire) is held: its
// result's error wraps a *tenure.HeldError naming the grant's holder.
// The call is subject to m.ID's faults.
func (c *Coordinator) ClaimPartitions(ctx context.Context, m partition.Member, names []string) ([]partition.ClaimResult, error) {
	if err := validateMember(m); err != nil {
		return nil, fmt.Errorf("memory: claim: %w", err)
	}
	for _, n := range names {
		if err := inputs.PartitionName(n); err != nil {
			return nil, fmt.Errorf("memory: claim for %s: %w", m, err)
		}
		if err := inputs.Group(m.Group, len(n)); err != nil {
			return nil, fmt.Errorf("memory: claim for %s: %w", m, err)
		}
	}
	out := make([]partition.ClaimResult, len(names))
	err := c.call(ctx, []string{m.ID}, func() error {
		now := c.clock.now()
		g := c.groupLocked(m.Group)
		live := liveEpochsLocked(g, now)
		self := live[m.Epoch]
		if self == nil || self.id != m.ID {
			return fmt.Errorf("membership expired or left: %w", tenure.ErrLost)
		}
		for i, n := range names {
			if out[i] = c.claimLocked(g, live, self, m.Group, n, now); out[i].Err == nil {
				out[i].Grant.Sent = m.Sent // the member's lease is the partition's
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("memory: claim %d partitions for %s: %w", len(names), m, err)
	}
	return out, nil
}

func (c *Coordinator) claimLocked(g *group, live map[uint64]*membership, self *membership, group, name string, now time.Duration) partition.ClaimResult {
	key := partition.Key(group, name)
	ks := c.keyLocked(key)
	if owner := live[g.owners[name]]; owner != nil && owner != self {
		return partition.ClaimResult{Err: &tenure.HeldError{Key: key, Holder: owner.id, Token: ks.token}}
	}
	if l := c.liveLocked(ks, now); l != nil {
		return partition.ClaimResult{Err: fmt.Errorf("partition %q of group %q is held as a single key: %w", name, group, &tenure.HeldError{Key: key, Holder: l.holder, Token: l.token})}
	}
	if ks.token == math.MaxUint64 {
		return partition.ClaimResult{Err: fmt.Errorf("tokens of key %q exhausted", key)}
	}
	ks.token++
	g.owners[name] = self.epoch
	return partition.ClaimResult{Grant: tenure.Grant{Key: key, Holder: self.id, Token: ks.token, TTL: self.ttl}}
}

// partitionOwnerLocked returns the live member that owns key as a
// partition (PartitionKey(group, name)), or nil: a key has one owner,
// whichever API took it.
func (c *Coordinator) partitionOwnerLocked(key string, now time.Duration) (group, name string, owner *membership) {
	i := strings.LastIndexByte(key, '/')
	if i < 0 {
		return "", "", nil
	}
	group, name = key[:i], key[i+1:]
	g := c.groups[group]
	if g == nil {
		return group, name, nil
	}
	epoch, ok := g.owners[name]
	if !ok {
		return group, name, nil
	}
	return group, name, c.liveMemberLocked(g, epoch, now)
}

// ReleasePartitions frees the partitions of gs that m still owns with
// their tokens. The call is subject to m.ID's faults.
func (c *Coordinator) ReleasePartitions(ctx context.Context, m partition.Member, gs []tenure.Grant) error {
	if err := validateMember(m); err != nil {
		return fmt.Errorf("memory: release partitions: %w", err)
	}
	err := c.call(ctx, []string{m.ID}, func() error {
		g := c.groupLocked(m.Group)
		for _, gr := range gs {
			name, ok := strings.CutPrefix(gr.Key, m.Group+"/")
			ks := c.keys[gr.Key]
			if ok && ks != nil && g.owners[name] == m.Epoch && ks.token == gr.Token {
				delete(g.owners, name)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("memory: release %d partitions of %s: %w", len(gs), m, err)
	}
	return nil
}

// CheckPartitions returns the grants of gs that m no longer owns with their
// tokens (see FreePartition). The call is subject to m.ID's faults.
func (c *Coordinator) CheckPartitions(ctx context.Context, m partition.Member, gs []tenure.Grant) ([]tenure.Grant, error) {
	if err := validateMember(m); err != nil {
		return nil, fmt.Errorf("memory: check partitions: %w", err)
	}
	var lost []tenure.Grant
	err := c.call(ctx, []string{m.ID}, func() error {
		g := c.groupLocked(m.Group)
		if ms := c.liveMemberLocked(g, m.Epoch, c.clock.now()); ms == nil || ms.id != m.ID {
			return fmt.Errorf("membership expired or left: %w", tenure.ErrLost)
		}
		for _, gr := range gs {
			name, ok := strings.CutPrefix(gr.Key, m.Group+"/")
			ks := c.keys[gr.Key]
			if !ok || ks == nil || g.owners[name] != m.Epoch || ks.token != gr.Token {
				lost = append(lost, gr)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("memory: check %d partitions of %s: %w", len(gs), m, err)
	}
	return lost, nil
}

// FreePartition frees partition name of group whoever owns it, as an
// operator does by hand on etcd (`tenure release --force` of its key,
// etcdctl del) or PostgreSQL (an UPDATE of the partition table): another
// member may claim it at once, while its owner runs it until it finds out
// (package partition checks its partitions every renewal). It is for tests
// and demonstrations of that window.
func (c *Coordinator) FreePartition(group, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.groupLocked(group).owners, name)
}

// GroupPartitions returns the live grants on group's partitions, sorted by
// key, each with the time left on its owner's lease. It has no holder: it
// is never faulted.
func (c *Coordinator) GroupPartitions(ctx context.Context, group string) ([]tenure.Grant, error) {
	if err := tenure.ValidateKey(group); err != nil {
		return nil, fmt.Errorf("memory: group partitions: %w", err)
	}
	if err := c.observe(ctx); err != nil {
		return nil, fmt.Errorf("memory: partitions of %q: %w", group, err)
	}
	defer c.mu.Unlock()
	now := c.clock.now()
	g := c.groupLocked(group)
	live := liveEpochsLocked(g, now)
	var out []tenure.Grant
	for name, epoch := range g.owners {
		owner := live[epoch]
		if owner == nil {
			continue
		}
		key := partition.Key(group, name)
		out = append(out, tenure.Grant{Key: key, Holder: owner.id, Token: c.keys[key].token, TTL: owner.expires - now})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// validateMember reports whether m can have come from JoinGroup.
func validateMember(m partition.Member) error {
	if err := tenure.ValidateKey(m.Group); err != nil {
		return fmt.Errorf("member %q: group: %w", m.ID, err)
	}
	if err := tenure.ValidateHolder(m.ID); err != nil {
		return fmt.Errorf("member of %q: %w", m.Group, err)
	}
	if m.Epoch == 0 {
		return fmt.Errorf("%w: member %q of %q has epoch 0", tenure.ErrInvalidGrant, m.ID, m.Group)
	}
	return nil
}
