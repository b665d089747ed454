package etcd

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tenure-dev/tenure/internal/limits"
	"github.com/tenure-dev/tenure/partition"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
)

// A key under a group's membership prefix is a membership key ("<lease in
// 16 hex digits>#<ID>") or a lease's mark ("<lease in 16 hex digits>",
// whose value is an ID): JoinGroup puts one of each on every lease it
// grants, in one transaction. A membership key is a member when JoinGroup
// could have written it as it stands and the mark of its group and lease
// exists, rides on that lease, names the key's ID and was created before
// every key on the lease outside the group's memberships (see firstOnLease): so a key put by hand on a member's
// lease, or on a lease of another group's member or of a grant, with or
// without a mark beside it, is no member, and neither is a membership
// whose mark was deleted. The other membership keys are foreign: one without a lease or
// on a lease longer than a day (JoinGroup puts its keys on a lease of the
// member's TTL, at most a day), one whose ID is not a holder identity or
// whose value is not what JoinGroup writes, one that names another lease
// than the one it rides on or that memberKey did not make, and one whose
// lease's mark is missing, rides on another lease, names another ID or
// was not created before the lease's other keys. A mark is foreign unless it rides
// on the lease it names, was created first on it, and the membership key of its
// ID on that lease is a member. GroupMembers and
// GroupPartitions leave foreign records out, so no partition is assigned
// to them; ListForeign lists each as a tenure.ForeignRecord with Member
// set (for a mark, the ID it names), and RemoveForeign deletes it.

// leaseLookup returns what etcd says of the lease kv rides on.
type leaseLookup func(ctx context.Context, kv *mvccpb.KeyValue) (leaseLeft, error)

// byKey indexes kvs, read under the membership prefix of one group or of
// the groups under a prefix, by etcd key.
func byKey(kvs []*mvccpb.KeyValue) map[string]*mvccpb.KeyValue {
	out := make(map[string]*mvccpb.KeyValue, len(kvs))
	for _, kv := range kvs {
		out[string(kv.Key)] = kv
	}
	return out
}

// leaseName reads s as memberKey and markKey write a lease: 16 lower-case
// hex digits.
func leaseName(s string) (uint64, bool) {
	if len(s) != 16 || strings.Trim(s, "0123456789abcdef") != "" {
		return 0, false
	}
	l, err := strconv.ParseUint(s, 16, 64)
	return l, err == nil
}

// membership sorts kv, a key under group's membership prefix, into a
// member (ok) or a foreign record (its Reason is not empty); a key on a
// lease that has expired is neither, nor is the mark of a member. read
// holds the keys read with kv, by etcd key.
func (c *Coordinator) membership(ctx context.Context, group string, kv *mvccpb.KeyValue, read map[string]*mvccpb.KeyValue, lookup leaseLookup) (m partition.Member, r tenure.ForeignRecord, ok bool, err error) {
	rest := strings.TrimPrefix(string(kv.Key), c.membersKey(group))
	if named, isMark := leaseName(rest); isMark {
		r, err := c.mark(ctx, group, kv, rest, named, read, lookup)
		return m, r, false, err
	}
	id, named, parsed := rest, uint64(0), false
	if l, ok := leaseName(rest[:min(16, len(rest))]); ok && len(rest) >= 18 && rest[16] == '#' {
		id, named, parsed = rest[17:], l, true
	}
	r = tenure.ForeignRecord{Key: group, Member: id, Holder: id, Token: uint64(kv.ModRevision)}
	why, keys, live, err := leaseOf(ctx, kv, lookup, &r)
	if err != nil || !live {
		return m, r, false, err // expired: etcd deletes it
	}
	switch {
	case !parsed:
		r.Malformed, why = true, append(why, "a key that JoinGroup does not write")
	case named != uint64(kv.Lease) && kv.Lease != int64(clientv3.NoLease):
		r.Malformed, why = true, append(why, "a lease that is not the one its key names")
	case kv.Lease != int64(clientv3.NoLease):
		w, err := c.markWhy(ctx, group, kv, id, read, keys)
		if err != nil {
			return m, r, false, err
		}
		why = append(why, w...)
	}
	if tenure.ValidateHolder(id) != nil {
		r.Malformed, why = true, append(why, "an ID that is not a holder identity")
	}
	if !validMemberValue(string(kv.Value)) {
		r.Malformed, why = true, append(why, fmt.Sprintf("a value that is not a TTL and partition count (%q)", kv.Value))
	}
	if len(why) > 0 {
		r.Reason = "a membership key that no member wrote as it stands: " + strings.Join(why, ", ")
		return m, r, false, nil
	}
	ttl, partitions := parseMemberValue(string(kv.Value))
	return partition.Member{Group: group, ID: id, Epoch: uint64(kv.Lease), TTL: ttl, Partitions: partitions}, r, true, nil
}

// markWhy says what is wrong with the mark of the lease that kv, the
// membership key of id in group, rides on, among read: nothing when it
// rides on that lease, names id and was created first on that lease
// (see firstOnLease, which is given keys, the keys on kv's lease when the
// lookup listed them).
func (c *Coordinator) markWhy(ctx context.Context, group string, kv *mvccpb.KeyValue, id string, read map[string]*mvccpb.KeyValue, keys [][]byte) ([]string, error) {
	mark := read[c.markKey(group, clientv3.LeaseID(kv.Lease))]
	switch {
	case mark == nil:
		return []string{"no mark of its lease"}, nil
	case mark.Lease != kv.Lease:
		return []string{"a mark of its lease that rides on another lease"}, nil
	case string(mark.Value) != id:
		return []string{fmt.Sprintf("a lease whose mark names another member (%q)", mark.Value)}, nil
	}
	why, err := c.firstOnLease(ctx, group, mark, keys)
	if why == "" || err != nil {
		return nil, err
	}
	return []string{why}, nil
}

// mark judges kv, the mark of lease named in group (rest, its key under
// the group's prefix): no record (an empty Reason) when it rides on that
// lease, was created first on it (see firstOnLease) and names the ID of
// a membership key on it that is a member, a foreign record otherwise. Its Member is the ID it names, or rest when
// it names none.
func (c *Coordinator) mark(ctx context.Context, group string, kv *mvccpb.KeyValue, rest string, named uint64, read map[string]*mvccpb.KeyValue, lookup leaseLookup) (tenure.ForeignRecord, error) {
	id := string(kv.Value)
	r := tenure.ForeignRecord{Key: group, Member: cmp.Or(id, rest), Holder: id, Token: uint64(kv.ModRevision)}
	why, keys, live, err := leaseOf(ctx, kv, lookup, &r)
	if err != nil || !live {
		return tenure.ForeignRecord{}, err // expired: etcd deletes it
	}
	if named != uint64(kv.Lease) && kv.Lease != int64(clientv3.NoLease) {
		r.Malformed, why = true, append(why, "a lease that is not the one its key names")
	}
	if tenure.ValidateHolder(id) != nil {
		r.Malformed, why = true, append(why, "a value that is not a holder identity")
	}
	if len(why) == 0 {
		first, err := c.firstOnLease(ctx, group, kv, keys)
		if err != nil {
			return tenure.ForeignRecord{}, err
		}
		if first != "" {
			why = append(why, first)
		}
	}
	if len(why) == 0 {
		key := read[c.memberKey(group, clientv3.LeaseID(named), id)]
		if key == nil || key.Lease != kv.Lease {
			why = append(why, "no membership key of its ID on its lease")
		} else if _, _, member, err := c.membership(ctx, group, key, read, lookup); err != nil {
			return tenure.ForeignRecord{}, err
		} else if !member {
			why = append(why, "the membership key of its ID is no member")
		}
	}
	if len(why) > 0 {
		r.Reason = "a membership mark that no member wrote as it stands: " + strings.Join(why, ", ")
	}
	return r, nil
}

// leaseOf sets r.TTL to the time left on the lease kv rides on (-1 for
// none) and says what makes that lease one JoinGroup never grants: none,
// or longer than a day. live is false when the lease has expired. keys
// are the keys on the lease, when lookup listed them.
func leaseOf(ctx context.Context, kv *mvccpb.KeyValue, lookup leaseLookup, r *tenure.ForeignRecord) (why []string, keys [][]byte, live bool, err error) {
	if kv.Lease == int64(clientv3.NoLease) {
		r.TTL = -1
		return []string{"no lease"}, nil, true, nil
	}
	l, err := lookup(ctx, kv)
	if err != nil || l.left < 0 {
		return nil, nil, false, err
	}
	if r.TTL = l.left; l.granted > limits.MaxTTL {
		why = append(why, fmt.Sprintf("a lease of %s, longer than tenure grants", l.granted))
	}
	return why, l.keys, true, nil
}

// validMemberValue reports whether v can be a value memberValue wrote: a
// TTL of 1 second to a day, then perhaps a space and a partition count.
func validMemberValue(v string) bool {
	secs, p, counted := strings.Cut(v, " ")
	n, err := strconv.ParseInt(secs, 10, 64)
	if err != nil || n < 1 || n > int64(limits.MaxTTL/time.Second) || strconv.FormatInt(n, 10) != secs {
		return false
	}
	k, err := strconv.Atoi(p)
	return !counted || (err == nil && k >= 1 && strconv.Itoa(k) == p)
}

// foreignMembers returns the foreign records among the membership keys of
// the groups under prefix (see above), in key order.
func (c *Coordinator) foreignMembers(ctx context.Context, prefix string) ([]tenure.ForeignRecord, error) {
	under := c.prefix + "#members/"
	resp, err := c.client.Get(ctx, under+prefix, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		return nil, err
	}
	lookup, read := c.freshLookup(), byKey(resp.Kvs)
	var out []tenure.ForeignRecord
	for _, kv := range resp.Kvs {
		group, rest, ok := strings.Cut(strings.TrimPrefix(string(kv.Key), under), "#")
		if !ok || rest == "" || tenure.ValidateKey(group) != nil {
			continue // under no group's prefix, or naming no member
		}
		_, r, member, err := c.membership(ctx, group, kv, read, lookup)
		if err != nil {
			return nil, err
		}
		if !member && r.Reason != "" {
			out = append(out, r)
		}
	}
	return out, nil
}

// removeForeignMember deletes the membership keys and marks of group r.Key
// that r names, if each is still the write r was read from (the same mod
// revision) and no member's, and reports whether it deleted any.
func (c *Coordinator) removeForeignMember(ctx context.Context, r tenure.ForeignRecord) (bool, error) {
	resp, err := c.client.Get(ctx, c.membersKey(r.Key), clientv3.WithPrefix())
	if err != nil {
		return false, err
	}
	removed, lookup, read := false, c.freshLookup(), byKey(resp.Kvs)
	for _, kv := range resp.Kvs {
		if uint64(kv.ModRevision) != r.Token {
			continue
		}
		_, now, member, err := c.membership(ctx, r.Key, kv, read, lookup)
		if err != nil {
			return removed, err
		}
		if member || now.Reason == "" || now.Member != r.Member {
			continue
		}
		dr, err := c.client.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(string(kv.Key)), "=", kv.ModRevision)).
			Then(clientv3.OpDelete(string(kv.Key))).
			Commit()
		if err != nil {
			return removed, err
		}
		if dr.Succeeded {
			removed = true
			c.log.Info("foreign membership key removed", "group", r.Key, "member", r.Member, "revision", r.Token, "reason", now.Reason)
		}
	}
	return removed, nil
}

// freshLookup asks etcd about each lease once per call of the lookup's
// maker: for listings that must say the time left.
func (c *Coordinator) freshLookup() leaseLookup {
	seen := map[int64]leaseLeft{}
	return func(ctx context.Context, kv *mvccpb.KeyValue) (leaseLeft, error) {
		if l, ok := seen[kv.Lease]; ok {
			return l, nil
		}
		l, err := c.leaseKeys(ctx, clientv3.LeaseID(kv.Lease))
		if err != nil {
			return l, err
		}
		seen[kv.Lease] = l
		return l, nil
	}
}

// grantedTTLs remembers the TTL each membership key's lease was granted
// with, by the lease and the revision of the key's write, so that every
// member's frequent GroupMembers asks etcd about a lease once, not on
// every read. It is exact: a lease's granted TTL never changes, and a key
// written on a lease is deleted with it, so a key live at that revision
// still rides on the very lease that was looked up (a lease granted later
// with the same ID carries only later writes).
type grantedTTLs struct {
	mu  sync.Mutex
	ttl map[[2]int64]time.Duration // {lease, mod revision} → granted TTL
}

// maxGrantedTTLs bounds grantedTTLs: past it, the map starts again.
const maxGrantedTTLs = 4096

// lookup is a leaseLookup for membership reads: the granted TTL, from
// memory when known; a lease that has expired is looked up again (and
// reported with left -1); the time left is not known.
func (g *grantedTTLs) lookup(c *Coordinator) leaseLookup {
	return func(ctx context.Context, kv *mvccpb.KeyValue) (leaseLeft, error) {
		k := [2]int64{kv.Lease, kv.ModRevision}
		g.mu.Lock()
		ttl, ok := g.ttl[k]
		g.mu.Unlock()
		if ok {
			return leaseLeft{granted: ttl, left: ttl}, nil
		}
		l, err := c.leaseKeys(ctx, clientv3.LeaseID(kv.Lease))
		if err != nil || l.left < 0 {
			return l, err
		}
		g.mu.Lock()
		if g.ttl == nil || len(g.ttl) >= maxGrantedTTLs {
			g.ttl = make(map[[2]int64]time.Duration)
		}
		g.ttl[k] = l.granted
		g.mu.Unlock()
		return l, nil
	}
}
