package etcd

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tenure-dev/tenure/internal/inputs"
	"github.com/tenure-dev/tenure/partition"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
)

// membersKey is the etcd key prefix of group's memberships:
// "#members/", the group, '#'. No key may contain a '#', so List never
// mistakes a membership for a grant, and the '#' that ends the group keeps
// each group's range apart from every other's: "#members/jobs#" is no
// prefix of "#members/jobs/eu#" or "#members/jobs-eu#".
func (c *Coordinator) membersKey(group string) string {
	return c.prefix + "#members/" + group + "#"
}

// memberKey is the etcd key of the membership of id in group on lease l:
// the group's prefix, l in 16 hex digits, '#', id. A membership is its
// lease, so two memberships of one ID (a restarted process whose old
// membership lives, a twin) are two keys, each gone with its own lease.
func (c *Coordinator) memberKey(group string, l clientv3.LeaseID, id string) string {
	return fmt.Sprintf("%s%016x#%s", c.membersKey(group), uint64(l), id)
}

// markKey is the etcd key of the mark of lease l in group: the group's
// prefix and l in 16 hex digits. JoinGroup puts it on l with the member's
// ID as its value, beside the membership key, so that the membership key
// of that ID on l, and no other, is a member (see membership). It sits in
// the group's range, so the one range read of the memberships reads it.
func (c *Coordinator) markKey(group string, l clientv3.LeaseID) string {
	return fmt.Sprintf("%s%016x", c.membersKey(group), uint64(l))
}

// JoinGroup makes id a member of group: one etcd lease of ttl (rounded up to
// whole seconds, raised to etcd's minimum) and, in one transaction, two
// keys on it: the membership key, named by the group, the lease and id,
// whose value records the TTL and the partition count announced, and the
// lease's mark, whose value is id. It then reads the keys on the lease: if
// another program put a key on it, or the check fails, it revokes the lease
// and returns an error; a membership it returns carried those two keys and
// no other when it was checked. A membership of id that is still live
// keeps its own keys and lease. Every partition the member claims is put
// on that lease, so one keepalive per renewal interval keeps them all, and
// etcd deletes them all when it expires. See partition.Coordinator.
func (c *Coordinator) JoinGroup(ctx context.Context, group, id string, ttl time.Duration, partitions int) (partition.Member, error) {
	op := fmt.Sprintf("etcd: join group %q as %q", group, id)
	if err := c.begin(ctx, op, inputs.Join(group, id, ttl, partitions)); err != nil {
		return partition.Member{}, err
	}
	l, err := c.grantLease(ctx, ttlSeconds(ttl))
	if err != nil {
		return partition.Member{}, fmt.Errorf("%s: %w", op, err)
	}
	m := partition.Member{Group: group, ID: id, Epoch: uint64(l.id), TTL: l.ttl, Sent: l.sent, Partitions: partitions}
	mark := c.markKey(group, l.id)
	resp, err := c.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(mark), "=", 0)).
		Then(clientv3.OpPut(c.memberKey(group, l.id, id), memberValue(m), clientv3.WithLease(l.id)),
			clientv3.OpPut(mark, id, clientv3.WithLease(l.id))).
		Commit()
	if err == nil && !resp.Succeeded {
		_, _ = c.client.Revoke(ctx, l.id) // nothing of ours rides on it
		err = fmt.Errorf("the mark %q exists already, put by another program", strings.TrimPrefix(mark, c.prefix))
	}
	if err != nil {
		return partition.Member{}, fmt.Errorf("%s: put membership on lease %x: %w", op, int64(l.id), err)
	}
	// Another program may have put a key on the lease since its grant: see
	// joinCheck.
	why, err := c.joinCheck(ctx, group, id, l.ttl, &mvccpb.KeyValue{Key: []byte(mark), Value: []byte(id), Lease: int64(l.id), CreateRevision: resp.Header.Revision, ModRevision: resp.Header.Revision})
	if err == nil && why != "" {
		err = fmt.Errorf("%s, by another program", why)
	}
	if err != nil {
		_, _ = c.client.Revoke(ctx, l.id)
		return partition.Member{}, fmt.Errorf("%s: check lease %x: %w", op, int64(l.id), err)
	}
	return m, nil
}

// memberValue is the value of m's membership key: the TTL granted in
// seconds, then, when m announces one, a space and its partition count:
// "10 8".
func memberValue(m partition.Member) string {
	v := strconv.FormatInt(int64(m.TTL/time.Second), 10)
	if m.Partitions > 0 {
		v += " " + strconv.Itoa(m.Partitions)
	}
	return v
}

// parseMemberValue reads a membership key's value (memberValue); what it
// cannot read is 0.
func parseMemberValue(v string) (ttl time.Duration, partitions int) {
	secs, p, _ := strings.Cut(v, " ")
	n, _ := strconv.ParseInt(secs, 10, 64)
	partitions, _ = strconv.Atoi(p)
	return time.Duration(n) * time.Second, partitions
}

// validMember reports whether m can have come from JoinGroup.
func validMember(m partition.Member) error {
	if err := inputs.Join(m.Group, m.ID, time.Second, 0); err != nil {
		return err
	}
	if m.Epoch == 0 {
		return fmt.Errorf("%w: member %q of %q has epoch 0", tenure.ErrInvalidGrant, m.ID, m.Group)
	}
	return nil
}

// RenewMember extends m's lease, and so all its partitions, with one
// KeepAliveOnce, then checks, in one transaction, that m's membership key
// and its lease's mark naming m still ride on that lease, and that the mark
// is still the first write on it (see firstOnLease: asked of etcd only for
// a mark it has not judged before). A lease that has
// expired is reported with an error wrapping tenure.ErrLost, and so is a
// membership whose key or mark was deleted or changed by hand: the others
// no longer count it as a member (see membership), so it must not go on
// as one, and its runner joins again.
func (c *Coordinator) RenewMember(ctx context.Context, m partition.Member) (partition.Member, error) {
	op := fmt.Sprintf("etcd: renew member %s", m)
	if err := c.begin(ctx, op, validMember(m)); err != nil {
		return partition.Member{}, err
	}
	sent := tenure.Now()
	l := clientv3.LeaseID(m.Epoch)
	resp, err := c.client.KeepAliveOnce(ctx, l)
	if isLeaseNotFound(err) {
		return partition.Member{}, fmt.Errorf("%s: %w: lease %x expired or was revoked", op, tenure.ErrLost, m.Epoch)
	}
	if err != nil {
		return partition.Member{}, fmt.Errorf("%s: %w", op, err)
	}
	mark, key := c.markKey(m.Group, l), c.memberKey(m.Group, l, m.ID)
	own, err := c.client.Txn(ctx).If(
		clientv3.Compare(clientv3.Value(mark), "=", m.ID),
		clientv3.Compare(clientv3.LeaseValue(mark), "=", l),
		clientv3.Compare(clientv3.LeaseValue(key), "=", l),
	).Then(clientv3.OpGet(mark)).Commit()
	if err != nil {
		return partition.Member{}, fmt.Errorf("%s: read its membership key and mark: %w", op, err)
	}
	why := ""
	if own.Succeeded { // a mark put again after the member's partitions is not first
		if why, err = c.firstOnLease(ctx, m.Group, firstKV(own.Responses[0].GetResponseRange().GetKvs()), nil); err != nil {
			return partition.Member{}, fmt.Errorf("%s: read the keys on its lease: %w", op, err)
		}
	}
	if !own.Succeeded || why != "" {
		return partition.Member{}, fmt.Errorf("%s: %w: its membership key %q or its lease's mark %q was deleted or changed by hand", op, tenure.ErrLost,
			strings.TrimPrefix(key, c.prefix), strings.TrimPrefix(mark, c.prefix))
	}
	// Never more than the membership was granted: a lease granted again
	// by its ID with a longer TTL must not lengthen what m is told.
	m.TTL, m.Sent = min(m.TTL, time.Duration(resp.TTL)*time.Second), sent
	return m, nil
}

// LeaveGroup revokes m's lease: etcd deletes its membership and every
// partition it owns in one step.
func (c *Coordinator) LeaveGroup(ctx context.Context, m partition.Member) error {
	op := fmt.Sprintf("etcd: leave %s", m)
	if err := c.begin(ctx, op, validMember(m)); err != nil {
		return err
	}
	if _, err := c.client.Revoke(ctx, clientv3.LeaseID(m.Epoch)); err != nil && !isLeaseNotFound(err) {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// GroupMembers returns group's live members with one range read, sorted by
// ID and epoch, plus one lease lookup per membership the coordinator has
// not seen before (see grantedTTLs). A member's TTL is the TTL its lease
// was granted. A membership key that no member wrote as it stands is no
// member (see ListForeign).
func (c *Coordinator) GroupMembers(ctx context.Context, group string) ([]partition.Member, error) {
	op := fmt.Sprintf("etcd: members of %q", group)
	if err := c.begin(ctx, op, tenure.ValidateKey(group)); err != nil {
		return nil, err
	}
	resp, err := c.client.Get(ctx, c.membersKey(group), clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	ms, err := c.members(ctx, group, resp.Kvs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return ms, nil
}

// members reads the memberships of group among kvs, read under its prefix,
// sorted by ID and epoch: the keys that members wrote (see membership).
func (c *Coordinator) members(ctx context.Context, group string, kvs []*mvccpb.KeyValue) ([]partition.Member, error) {
	out := make([]partition.Member, 0, len(kvs))
	lookup, read := c.memberTTLs.lookup(c), byKey(kvs)
	for _, kv := range kvs {
		m, _, ok, err := c.membership(ctx, group, kv, read, lookup)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].ID != out[j].ID {
			return out[i].ID < out[j].ID
		}
		return out[i].Epoch < out[j].Epoch
	})
	return out, nil
}
