package etcd

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// firstOnLease says what makes mark, the mark of a membership of group
// that rides on its lease, no mark of JoinGroup's: empty when it is. JoinGroup
// puts its membership key and mark on a lease it has just granted, in one
// transaction that writes nothing outside group's memberships, before
// anything else rides on it, so every other key on that lease was created
// after the mark. A key on the lease created before the mark or with it
// (another group's membership, a grant's key, even when written again
// since) shows the lease was someone else's first: the mark was put by
// hand on a lease that a live process renews, and the membership it
// marks is no member that any process runs. It asks etcd for the keys on
// the lease once per mark it finds to be first (tenure creates a key on a
// lease only after the lease's mark). It reads the keys outside group's
// memberships (a member's partitions among them) in transactions of at
// most maxTxnOps reads each. keys are the keys on the lease when the
// caller has them (nil: it asks etcd).
func (c *Coordinator) firstOnLease(ctx context.Context, group string, mark *mvccpb.KeyValue, keys [][]byte) (string, error) {
	k := [2]int64{mark.Lease, mark.CreateRevision}
	if c.firstMarks.has(k) {
		return "", nil
	}
	if keys == nil {
		l, err := c.leaseKeys(ctx, clientv3.LeaseID(mark.Lease))
		if err != nil || l.left < 0 {
			return "", err // expired: its keys are judged so
		}
		keys = l.keys
	}
	var others [][]byte // the keys on the lease outside group's memberships
	for _, key := range keys {
		if !strings.HasPrefix(string(key), c.membersKey(group)) {
			others = append(others, key)
		}
	}
	why := ""
	err := c.readKeys(ctx, others, func(kv *mvccpb.KeyValue) bool {
		// A key gone since the lease listed it (a partition handed over)
		// or now on another lease says nothing of this lease.
		if kv.Lease == mark.Lease && kv.CreateRevision <= mark.CreateRevision {
			why = fmt.Sprintf("a lease that carried %q before its mark", strings.TrimPrefix(string(kv.Key), c.prefix))
		}
		return why == ""
	})
	if why == "" && err == nil {
		c.firstMarks.add(k)
	}
	return why, err
}

// readKeys reads the etcd keys keys, in transactions of at most maxTxnOps
// reads each, and calls f with each that exists, until f returns false.
func (c *Coordinator) readKeys(ctx context.Context, keys [][]byte, f func(*mvccpb.KeyValue) bool) error {
	for lo := 0; lo < len(keys); lo += maxTxnOps {
		batch := keys[lo:min(lo+maxTxnOps, len(keys))]
		gets := make([]clientv3.Op, len(batch))
		for i, key := range batch {
			gets[i] = clientv3.OpGet(string(key)) // not keys only: etcd 3.7 leaves the lease out then
		}
		r, err := c.client.Txn(ctx).Then(gets...).Commit()
		if err != nil {
			return err
		}
		for _, get := range r.Responses {
			if kv := firstKV(get.GetResponseRange().GetKvs()); kv != nil && !f(kv) {
				return nil
			}
		}
	}
	return nil
}

// firstMarks remembers the marks that firstOnLease found first on their
// lease, by lease and create revision.
type firstMarks struct {
	mu    sync.Mutex
	known map[[2]int64]bool
}

func (f *firstMarks) has(k [2]int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.known[k]
}

// add remembers k; past maxGrantedTTLs marks, it starts again.
func (f *firstMarks) add(k [2]int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.known == nil || len(f.known) >= maxGrantedTTLs {
		f.known = make(map[[2]int64]bool)
	}
	f.known[k] = true
}

// leaseKeys is leaseTTL, with the keys on the lease.
func (c *Coordinator) leaseKeys(ctx context.Context, id clientv3.LeaseID) (leaseLeft, error) {
	l := leaseLeft{left: -1, none: id == clientv3.NoLease}
	if l.none {
		return l, nil
	}
	r, err := c.client.TimeToLive(ctx, id, clientv3.WithAttachedKeys())
	switch {
	case isLeaseNotFound(err):
		return l, nil
	case err != nil:
		return l, fmt.Errorf("lease %x: %w", int64(id), err)
	case r.TTL < 0: // -1: expired (remaining TTLs are rounded down: 0 is live)
		return l, nil
	}
	l.granted, l.left, l.keys = time.Duration(r.GrantedTTL)*time.Second, time.Duration(r.TTL)*time.Second, r.Keys
	if l.keys == nil {
		l.keys = [][]byte{}
	}
	return l, nil
}
