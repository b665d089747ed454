package etcd

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tenure-dev/tenure/internal/inputs"
	"github.com/tenure-dev/tenure/internal/limits"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
)

// List returns the live grants on every key under prefix, sorted by key,
// each with the time left on its lease (whole seconds, rounded down, as etcd
// reports it). See tenure.Coordinator. Keys whose lease has expired but that etcd
// has not deleted yet are left out, and so are keys without a lease (see
// ListForeign). It costs one range read plus one lease lookup per distinct
// lease (one per holder and TTL).
func (c *Coordinator) List(ctx context.Context, prefix string) ([]tenure.Grant, error) {
	op := fmt.Sprintf("etcd: list %q", prefix)
	var out []tenure.Grant
	err := c.each(ctx, op, prefix, false, func(key string, kv *mvccpb.KeyValue, l leaseLeft) error {
		if l.left >= 0 {
			out = append(out, tenure.Grant{Key: key, Holder: string(kv.Value), Token: uint64(kv.ModRevision), TTL: l.left})
		}
		return nil
	})
	return out, err
}

// ListForeign returns the keys under prefix, sorted by key, that Acquire
// refuses but that no tenure grant wrote as they stand: a key without a
// lease (put by hand or by another program: it never expires), a key on a
// lease longer than a day, a key whose value is not a holder identity, and
// a key put on a live lease that tenure did not put there: on the lease of
// a group's member, any key but that member's partitions; on another lease
// that carries more than one key, any key but the one created first on it
// (each grant rides on a lease of its own). Their tokens are the keys' mod
// revisions. It lists too, with Member set,
// the membership keys and marks of the groups under prefix that no member
// wrote as they stand, which are no members (see GroupMembers). Users free
// such a key with RemoveForeign. It costs what List costs, plus a range
// read of the memberships, plus, for each lease that carries more than one
// key (a member's), a read of its membership, or of its keys when it is no
// member's.
func (c *Coordinator) ListForeign(ctx context.Context, prefix string) ([]tenure.ForeignRecord, error) {
	op := fmt.Sprintf("etcd: list foreign keys under %q", prefix)
	var out []tenure.ForeignRecord
	uses := leaseUses{}
	err := c.each(ctx, op, prefix, true, func(key string, kv *mvccpb.KeyValue, l leaseLeft) error {
		r, ok, err := c.foreignOf(ctx, key, kv, l, uses)
		if ok {
			out = append(out, r)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	ms, err := c.foreignMembers(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	out = append(out, ms...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// RemoveForeign deletes r's key if it is still the write r was read from
// (the same mod revision) and that write is foreign (see ListForeign), and
// reports whether it did. Deleting the key frees it: the next Acquire puts
// it anew, at a greater revision, so tokens still increase. For a
// membership record (r.Member set), it deletes the membership key or mark
// of group r.Key that r was read from, if it is still no member's. It judges the
// key as it reads it, never by r's other fields: a record that names a
// live grant or membership, however it was made, removes nothing.
func (c *Coordinator) RemoveForeign(ctx context.Context, r tenure.ForeignRecord) (bool, error) {
	op := fmt.Sprintf("etcd: remove foreign key %q at revision %d", r.Key, r.Token)
	if r.Member != "" {
		op = fmt.Sprintf("etcd: remove foreign membership %q of %q at revision %d", r.Member, r.Key, r.Token)
	}
	if err := c.begin(ctx, op, tenure.ValidateKey(r.Key)); err != nil {
		return false, err
	}
	remove := c.removeForeignKey
	if r.Member != "" {
		remove = c.removeForeignMember
	}
	ok, err := remove(ctx, r)
	if err != nil {
		return false, fmt.Errorf("%s: %w", op, err)
	}
	return ok, nil
}

// removeForeignKey deletes r's key if it is still at r's revision and
// foreign as it stands, with a delete compared on that revision: the write
// judged is the write deleted (a key's value and lease never change
// without a new revision, nor does a lease's granted TTL; a key on a
// member's lease that is none of its partitions stays none, and a key on
// another lease that was not created first on it stays so).
func (c *Coordinator) removeForeignKey(ctx context.Context, r tenure.ForeignRecord) (bool, error) {
	ek := c.EtcdKey(r.Key)
	get, err := c.client.Get(ctx, ek)
	if err != nil {
		return false, err
	}
	if len(get.Kvs) == 0 || uint64(get.Kvs[0].ModRevision) != r.Token {
		return false, nil // another write since: not the record r read
	}
	kv := get.Kvs[0]
	l, err := c.leaseKeys(ctx, clientv3.LeaseID(kv.Lease))
	if err != nil {
		return false, err
	}
	now, foreign, err := c.foreignOf(ctx, r.Key, kv, l, leaseUses{})
	if err != nil {
		return false, err
	}
	if !foreign {
		return false, nil // a grant as tenure writes one
	}
	resp, err := c.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(ek), "=", kv.ModRevision)).
		Then(clientv3.OpDelete(ek)).
		Commit()
	if err != nil {
		return false, err
	}
	if resp.Succeeded {
		c.log.Info("foreign key removed", "key", r.Key, "holder", now.Holder, "revision", r.Token, "reason", now.Reason)
	}
	return resp.Succeeded, nil
}

// leaseLeft is what etcd says of the lease a key rides on: the TTL it was
// granted with and the time it has left, -1 when it has expired or the key
// has none (see Coordinator.leaseTTL).
type leaseLeft struct {
	granted, left time.Duration
	none          bool     // the key has no lease
	keys          [][]byte // the keys on the lease, when looked up with them (leaseKeys)
}

// each calls f, in key order, for every tenure key under prefix with the
// lease it rides on, and the keys on that lease when withKeys is set: one
// range read plus one lease lookup per distinct lease. It stops at f's
// first error.
func (c *Coordinator) each(ctx context.Context, op, prefix string, withKeys bool, f func(string, *mvccpb.KeyValue, leaseLeft) error) error {
	if err := c.begin(ctx, op, inputs.Prefix(prefix)); err != nil {
		return err
	}
	resp, err := c.client.Get(ctx, c.EtcdKey(prefix), clientv3.WithPrefix())
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	leases := make(map[clientv3.LeaseID]leaseLeft)
	kvs := resp.Kvs
	sort.Slice(kvs, func(i, j int) bool { return string(kvs[i].Key) < string(kvs[j].Key) })
	for _, kv := range kvs {
		key := strings.TrimPrefix(string(kv.Key), c.prefix)
		if tenure.ValidateKey(key) != nil {
			continue // not a tenure key
		}
		id := clientv3.LeaseID(kv.Lease)
		l, seen := leases[id]
		if !seen {
			if withKeys {
				l, err = c.leaseKeys(ctx, id)
			} else {
				l.granted, l.left, err = c.leaseTTL(ctx, id)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", op, err)
			}
			l.none = id == clientv3.NoLease
			leases[id] = l
		}
		if err := f(key, kv, l); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
	}
	return nil
}

// foreignOf describes kv, the etcd key of key on lease l (looked up with
// its keys), when Acquire refuses it but tenure did not write it as it
// stands (see ListForeign); uses remembers what it read of shared leases.
func (c *Coordinator) foreignOf(ctx context.Context, key string, kv *mvccpb.KeyValue, l leaseLeft, uses leaseUses) (tenure.ForeignRecord, bool, error) {
	r := tenure.ForeignRecord{Key: key, Holder: string(kv.Value), Token: uint64(kv.ModRevision), TTL: l.left}
	var why []string
	switch {
	case l.none:
		why, r.TTL = append(why, "no lease"), -1
	case l.left < 0:
		return r, false, nil // expired: etcd deletes it
	case l.granted > limits.MaxTTL:
		why = append(why, fmt.Sprintf("a lease of %s, longer than tenure grants", l.granted))
	}
	if tenure.ValidateHolder(r.Holder) != nil {
		r.Malformed = true
		why = append(why, "a value that is not a holder identity")
	}
	stranger, err := c.strangerOn(ctx, key, kv, l, uses)
	if err != nil {
		return r, false, err
	}
	if stranger != "" {
		why = append(why, stranger)
	}
	r.Reason = strings.Join(why, ", ")
	return r, len(why) > 0, nil
}

// foreignWrite reports whether kv, the etcd key of key, rides on no lease,
// on a lease longer than tenure grants, or on a lease that tenure did not
// put it on (see ListForeign): a write no grant made, which Acquire does
// not take over even for the holder its value names. It costs one lease
// lookup, plus a read for a lease that carries more than one key.
func (c *Coordinator) foreignWrite(ctx context.Context, key string, kv *mvccpb.KeyValue) (bool, error) {
	id := clientv3.LeaseID(kv.Lease)
	if id == clientv3.NoLease {
		return true, nil
	}
	l, err := c.leaseKeys(ctx, id)
	if err != nil || l.left < 0 {
		return false, err
	}
	if l.granted > limits.MaxTTL {
		return true, nil
	}
	why, err := c.strangerOn(ctx, key, kv, l, leaseUses{})
	return why != "", err
}
