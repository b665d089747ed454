package etcd

import (
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

// A key under a group's membership prefix that no member wrote as it
// stands is no member: one without a lease or on a lease longer than a
// day (JoinGroup puts its key on a lease of the member's TTL, at most a
// day), one whose ID is not a holder identity or whose value is not what
// JoinGroup writes, one that names another lease than the one it rides on
// or that memberKey did not make, and one on a lease that carries an
// earlier membership key of the group (JoinGroup puts one on each lease it
// grants: a later one, put by hand on a live member's lease, would be a
// member no process runs for as long as that member renews). GroupMembers and GroupPartitions leave
// it out, so no partition is assigned to it; ListForeign lists it as a
// tenure.ForeignRecord with Member set, and RemoveForeign deletes it.

// leaseLookup returns what etcd says of the lease kv rides on.
type leaseLookup func(ctx context.Context, kv *mvccpb.KeyValue) (leaseLeft, error)

// membership sorts kv, a key under group's membership prefix, into a
// member (ok) or a foreign record (why is not empty); a key on a lease
// that has expired is neither. later says kv's lease carries an earlier
// membership key of group (see laterOnLease).
func (c *Coordinator) membership(ctx context.Context, group string, kv *mvccpb.KeyValue, later bool, lookup leaseLookup) (m partition.Member, r tenure.ForeignRecord, ok bool, err error) {
	rest := strings.TrimPrefix(string(kv.Key), c.membersKey(group))
	id, named, parsed := rest, uint64(0), false
	if len(rest) >= 18 && rest[16] == '#' {
		if l, err := strconv.ParseUint(rest[:16], 16, 64); err == nil {
			id, named, parsed = rest[17:], l, true
		}
	}
	r = tenure.ForeignRecord{Key: group, Member: id, Holder: id, Token: uint64(kv.ModRevision), TTL: -1}
	var why []string
	switch {
	case !parsed:
		r.Malformed, why = true, append(why, "a key that JoinGroup does not write")
	case named != uint64(kv.Lease) && kv.Lease != int64(clientv3.NoLease):
		r.Malformed, why = true, append(why, "a lease that is not the one its key names")
	case later:
		why = append(why, "a lease that carries another membership")
	}
	if kv.Lease == int64(clientv3.NoLease) {
		why = append(why, "no lease")
	} else {
		l, err := lookup(ctx, kv)
		if err != nil || l.left < 0 {
			return m, r, false, err // expired: etcd deletes it
		}
		if r.TTL = l.left; l.granted > limits.MaxTTL {
			why = append(why, fmt.Sprintf("a lease of %s, longer than tenure grants", l.granted))
		}
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

// laterOnLease returns the membership keys among kvs (read under the
// membership prefix of one group or of the groups under a prefix) whose
// lease carries an earlier membership key of the same group, by create
// revision.
func (c *Coordinator) laterOnLease(kvs []*mvccpb.KeyValue) map[string]bool {
	type groupLease struct {
		group string
		lease int64
	}
	first := map[groupLease]int64{}
	groupOf := func(kv *mvccpb.KeyValue) groupLease {
		group, _, _ := strings.Cut(strings.TrimPrefix(string(kv.Key), c.prefix+"#members/"), "#")
		return groupLease{group, kv.Lease}
	}
	for _, kv := range kvs {
		if k := groupOf(kv); kv.Lease != int64(clientv3.NoLease) {
			if rev, ok := first[k]; !ok || kv.CreateRevision < rev {
				first[k] = kv.CreateRevision
			}
		}
	}
	later := map[string]bool{}
	for _, kv := range kvs {
		if kv.Lease != int64(clientv3.NoLease) && kv.CreateRevision > first[groupOf(kv)] {
			later[string(kv.Key)] = true
		}
	}
	return later
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
	lookup, later := c.freshLookup(), c.laterOnLease(resp.Kvs)
	var out []tenure.ForeignRecord
	for _, kv := range resp.Kvs {
		group, rest, ok := strings.Cut(strings.TrimPrefix(string(kv.Key), under), "#")
		if !ok || rest == "" || tenure.ValidateKey(group) != nil {
			continue // under no group's prefix, or naming no member
		}
		_, r, member, err := c.membership(ctx, group, kv, later[string(kv.Key)], lookup)
		if err != nil {
			return nil, err
		}
		if !member && r.Reason != "" {
			out = append(out, r)
		}
	}
	return out, nil
}

// removeForeignMember deletes the membership keys of group r.Key that r
// names, if each is still the write r was read from (the same mod
// revision) and no member's, and reports whether it deleted any.
func (c *Coordinator) removeForeignMember(ctx context.Context, r tenure.ForeignRecord) (bool, error) {
	resp, err := c.client.Get(ctx, c.membersKey(r.Key), clientv3.WithPrefix())
	if err != nil {
		return false, err
	}
	removed, lookup, later := false, c.freshLookup(), c.laterOnLease(resp.Kvs)
	for _, kv := range resp.Kvs {
		if uint64(kv.ModRevision) != r.Token {
			continue
		}
		_, now, member, err := c.membership(ctx, r.Key, kv, later[string(kv.Key)], lookup)
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
		var l leaseLeft
		var err error
		if l.granted, l.left, err = c.leaseTTL(ctx, clientv3.LeaseID(kv.Lease)); err != nil {
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
		granted, left, err := c.leaseTTL(ctx, clientv3.LeaseID(kv.Lease))
		if err != nil || left < 0 {
			return leaseLeft{granted: granted, left: left}, err
		}
		g.mu.Lock()
		if g.ttl == nil || len(g.ttl) >= maxGrantedTTLs {
			g.ttl = make(map[[2]int64]time.Duration)
		}
		g.ttl[k] = granted
		g.mu.Unlock()
		return leaseLeft{granted: granted, left: left}, nil
	}
}
