package etcd

import (
	"context"
	"fmt"
	"strings"

	"github.com/tenure-dev/tenure/internal/inputs"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// What tenure puts on an etcd lease: a grant of a single key rides on a
// lease of its own, which carries that key alone (Acquire puts it on a
// lease it has just granted, or on the spare lease of the same key and
// holder, which carries nothing); a member's lease carries its membership
// key, its mark, and the partition keys "<group>/<name>" it claimed, whose
// value is its ID. Any other key on a lease that carries more than one
// key was put there by another program or by hand, and lives for as long
// as the lease's holder renews it: it is foreign (see ListForeign). On a
// lease that carries a member (see membership), that is every tenure key
// but the member's own partitions. On a lease that carries none, it is
// every key but the one created first on it: a grant's key is the first
// on its lease (an Acquire that finds another key on the spare lease it
// put its key on takes its key off it and puts it on a new lease).
// The partitions of a membership that is no member (its mark deleted by
// hand, say) are foreign too, as they are on the other backends: no
// member's claim takes them.

// leaseUse is what a listing learned of a lease that carries more than
// one key: the member whose lease it is, or, when it is no member's, the
// key created first on it.
type leaseUse struct {
	group, member string // the member whose lease it is, if any
	first         string // the etcd key created first on it, if one was (no member's lease)
}

// leaseUses remembers, for one listing, what it learned of each lease
// that carries more than one key.
type leaseUses map[int64]leaseUse

// strangerOn says what makes kv, the etcd key of key on lease l, a key
// that tenure did not put on that lease: empty when l carries kv alone,
// or when kv is the partition of the member whose lease it is, or, when l
// is no member's, the key created first on it. l must have been looked up
// with its keys (leaseKeys). It reads etcd once per lease that carries
// more than one key, and remembers the answer in uses.
func (c *Coordinator) strangerOn(ctx context.Context, key string, kv *mvccpb.KeyValue, l leaseLeft, uses leaseUses) (string, error) {
	if l.none || l.left < 0 || len(l.keys) <= 1 {
		return "", nil
	}
	u, ok := uses[kv.Lease]
	if !ok {
		var err error
		if u, err = c.leaseUseOf(ctx, kv.Lease, l); err != nil {
			return "", err
		}
		uses[kv.Lease] = u
	}
	switch {
	case u.member != "":
		if group, name, ok := cutLast(key); ok && group == u.group && string(kv.Value) == u.member && inputs.PartitionName(name) == nil {
			return "", nil
		}
		return fmt.Sprintf("a key put on the lease of member %q of group %q, which is none of its partitions", u.member, u.group), nil
	case onLease(l, c.memberKeyOf(key, kv)):
		return "a partition of a membership that is no member", nil
	case u.first == string(kv.Key):
		return "", nil
	case u.first != "":
		return fmt.Sprintf("a key put on a lease that carried %q before it", strings.TrimPrefix(u.first, c.prefix)), nil
	}
	return "a key put on a lease that carried another key as early as it", nil
}

// leaseUseOf reads what lease id, which carries the keys l lists, is used
// for: the member whose lease it is (a group's mark of id among its keys
// whose membership is a member), else the key created first on it.
func (c *Coordinator) leaseUseOf(ctx context.Context, id int64, l leaseLeft) (leaseUse, error) {
	under := c.prefix + "#members/"
	fresh := c.freshLookup()
	lookup := func(ctx context.Context, kv *mvccpb.KeyValue) (leaseLeft, error) {
		if kv.Lease == id {
			return l, nil
		}
		return fresh(ctx, kv)
	}
	for _, k := range l.keys {
		group, rest, ok := strings.Cut(strings.TrimPrefix(string(k), under), "#")
		if !strings.HasPrefix(string(k), under) || !ok || rest != fmt.Sprintf("%016x", uint64(id)) {
			continue // no mark of this lease
		}
		resp, err := c.client.Get(ctx, c.markKey(group, clientv3.LeaseID(id)), clientv3.WithPrefix())
		if err != nil {
			return leaseUse{}, err
		}
		read := byKey(resp.Kvs)
		for _, kv := range resp.Kvs {
			if string(kv.Key) == string(k) {
				continue // the mark
			}
			m, _, member, err := c.membership(ctx, group, kv, read, lookup)
			if err != nil {
				return leaseUse{}, err
			}
			if member && m.Epoch == uint64(id) {
				return leaseUse{group: group, member: m.ID}, nil
			}
		}
	}
	first, err := c.createdFirst(ctx, id, l.keys)
	return leaseUse{first: first}, err
}

// createdFirst returns the key among keys, the keys on lease id, that was
// created before every other key still on it; empty when two were created
// together first.
func (c *Coordinator) createdFirst(ctx context.Context, id int64, keys [][]byte) (string, error) {
	first, rev, tied := "", int64(0), false
	err := c.readKeys(ctx, keys, func(kv *mvccpb.KeyValue) bool {
		switch {
		case kv.Lease != id: // moved since the lease listed it
		case first == "" || kv.CreateRevision < rev:
			first, rev, tied = string(kv.Key), kv.CreateRevision, false
		case kv.CreateRevision == rev:
			tied = true
		}
		return true
	})
	if tied || err != nil {
		return "", err
	}
	return first, nil
}

// memberKeyOf is the etcd key of the membership whose partition kv, the
// etcd key of key, would be: the membership of kv's value, in the group
// key names, on kv's lease; empty when key names no partition.
func (c *Coordinator) memberKeyOf(key string, kv *mvccpb.KeyValue) string {
	group, name, ok := cutLast(key)
	if !ok || inputs.PartitionName(name) != nil {
		return ""
	}
	return c.memberKey(group, clientv3.LeaseID(kv.Lease), string(kv.Value))
}

// onLease reports whether etcd key ek is among the keys on lease l.
func onLease(l leaseLeft, ek string) bool {
	for _, k := range l.keys {
		if string(k) == ek {
			return ek != ""
		}
	}
	return false
}
