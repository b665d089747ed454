package etcd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tenure-dev/tenure/internal/inputs"
	"github.com/tenure-dev/tenure/partition"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
)

// maxTxnOps is etcd's default --max-txn-ops: how many operations one
// transaction may hold.
const maxTxnOps = 128

// claimTxnOps is how many partitions one transaction claims: each is a nested
// transaction with one operation per branch, whose failure branch is a
// transaction comparing two things; etcd lets a nested transaction hold what
// the one around it leaves of --max-txn-ops, so 125 leave each claim the 3
// it needs. (125 claims are about 30 KB, far below --max-request-bytes,
// 1.5 MiB.)
const claimTxnOps = maxTxnOps - 3

// releaseTxnOps is how many partitions one transaction releases: each
// nested transaction compares three things, so 125 leave each its three.
const releaseTxnOps = maxTxnOps - 3

// txnsInFlight is how many transactions of one claim or release are sent
// at once: etcd's raft appends and syncs concurrent proposals together, so
// a member claiming thousands of partitions waits for a few disk syncs, not
// one per transaction.
const txnsInFlight = 8

// ClaimPartitions claims the named partitions for m, 125 per transaction,
// up to 8 transactions at once: each free partition key is created on m's
// lease, with the member's ID as its value; its token is the revision of
// that write. See partition.Coordinator. If m's lease has expired, the
// error wraps tenure.ErrLost and nothing is claimed. A transaction that
// failed otherwise leaves its partitions' outcome unknown: their results
// carry its error, and if every transaction failed, so does the call. A
// name whose partition key (group/name) would be longer than a key may be
// is refused with an error wrapping tenure.ErrInvalidKey.
func (c *Coordinator) ClaimPartitions(ctx context.Context, m partition.Member, names []string) ([]partition.ClaimResult, error) {
	op := fmt.Sprintf("etcd: claim %d partitions for %s", len(names), m)
	if err := validMember(m); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	for _, n := range names {
		if err := inputs.PartitionName(n); err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		if err := inputs.Group(m.Group, len(n)); err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
	}
	if err := c.begin(ctx, op); err != nil {
		return nil, err
	}
	out := make([]partition.ClaimResult, len(names))
	errs := eachChunk(len(names), claimTxnOps, func(lo, hi int) error {
		res, err := c.claimChunk(ctx, m, names[lo:hi])
		copy(out[lo:hi], res)
		return err
	})
	var first error
	failed := 0
	for i, err := range errs {
		if errors.Is(err, tenure.ErrLost) {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		if err == nil {
			continue
		}
		failed, first = failed+1, cmp.Or(first, err)
		for j := i * claimTxnOps; j < min((i+1)*claimTxnOps, len(names)); j++ {
			out[j].Err = fmt.Errorf("%s: outcome unknown: %w", op, err)
		}
	}
	if failed == len(errs) && first != nil {
		return nil, fmt.Errorf("%s: %w", op, first)
	}
	return out, nil
}

// eachChunk calls do for each chunk [lo, hi) of n items, size items at most,
// txnsInFlight chunks at a time, and returns each chunk's error, in order.
func eachChunk(n, size int, do func(lo, hi int) error) []error {
	errs := make([]error, (n+size-1)/size)
	slots := make(chan struct{}, txnsInFlight)
	var wg sync.WaitGroup
	for i := range errs {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			errs[i] = do(i*size, min((i+1)*size, n))
		}()
	}
	wg.Wait()
	return errs
}

// claimChunk claims names (at most claimTxnOps) in one transaction of nested
// transactions, one per key: create it if absent; else write it again if it
// is m's (a new revision, so a new token: see partition.Coordinator), else
// read it.
func (c *Coordinator) claimChunk(ctx context.Context, m partition.Member, names []string) ([]partition.ClaimResult, error) {
	lease := clientv3.LeaseID(m.Epoch)
	ops := make([]clientv3.Op, len(names))
	for i, n := range names {
		ek := c.EtcdKey(partition.Key(m.Group, n))
		put := clientv3.OpPut(ek, m.ID, clientv3.WithLease(lease))
		ops[i] = clientv3.OpTxn(
			[]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(ek), "=", 0)},
			[]clientv3.Op{put},
			[]clientv3.Op{clientv3.OpTxn([]clientv3.Cmp{
				clientv3.Compare(clientv3.Value(ek), "=", m.ID),
				clientv3.Compare(clientv3.LeaseValue(ek), "=", int64(lease)),
			}, []clientv3.Op{put}, []clientv3.Op{clientv3.OpGet(ek)})})
	}
	resp, err := c.client.Txn(ctx).Then(ops...).Commit()
	if isLeaseNotFound(err) {
		return nil, fmt.Errorf("%w: lease %x expired or was revoked", tenure.ErrLost, m.Epoch)
	}
	if err != nil {
		return nil, err
	}
	out := make([]partition.ClaimResult, len(names))
	for i, r := range resp.Responses {
		key := partition.Key(m.Group, names[i])
		tr := r.GetResponseTxn()
		if !tr.Succeeded {
			tr = tr.Responses[0].GetResponseTxn() // the key exists: is it m's?
		}
		if tr.Succeeded {
			out[i].Grant = tenure.Grant{Key: key, Holder: m.ID, Token: uint64(resp.Header.Revision), TTL: m.TTL, Sent: m.Sent}
			continue
		}
		kv := firstKV(tr.Responses[0].GetResponseRange().Kvs)
		switch {
		case kv == nil:
			out[i].Err = fmt.Errorf("partition %q vanished during the claim", key)
		default:
			out[i].Err = &tenure.HeldError{Key: key, Holder: string(kv.Value), Token: uint64(kv.ModRevision)}
		}
	}
	return out, nil
}

// ReleasePartitions deletes the partition keys of gs that m still owns with
// their tokens, 125 per transaction, up to 8 transactions at once.
func (c *Coordinator) ReleasePartitions(ctx context.Context, m partition.Member, gs []tenure.Grant) error {
	op := fmt.Sprintf("etcd: release %d partitions of %s", len(gs), m)
	if err := validMember(m); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if err := c.begin(ctx, op); err != nil {
		return err
	}
	errs := eachChunk(len(gs), releaseTxnOps, func(lo, hi int) error {
		ops := make([]clientv3.Op, 0, hi-lo)
		for _, g := range gs[lo:hi] {
			ek := c.EtcdKey(g.Key)
			ops = append(ops, clientv3.OpTxn([]clientv3.Cmp{
				clientv3.Compare(clientv3.ModRevision(ek), "=", int64(g.Token)),
				clientv3.Compare(clientv3.Value(ek), "=", m.ID),
				clientv3.Compare(clientv3.LeaseValue(ek), "=", int64(m.Epoch)),
			}, []clientv3.Op{clientv3.OpDelete(ek)}, nil))
		}
		_, err := c.client.Txn(ctx).Then(ops...).Commit()
		return err
	})
	if failed := slices.DeleteFunc(errs, func(err error) bool { return err == nil }); len(failed) > 0 {
		return fmt.Errorf("%s: %d of %d transactions failed, the first: %w", op, len(failed), len(errs), failed[0])
	}
	return nil
}

// GroupPartitions lists the live partitions of group with one transaction
// of two range reads, the keys under "group/" and group's memberships,
// plus one lease lookup per member that owns any: it keeps the keys one
// level below "group/" that ride on the lease of a membership of group
// and hold its member's ID. A single key named like a partition, or a
// partition of a group nested in group ("group/x/0"), is none of group's.
// Each has the time left on its owner's lease as TTL.
func (c *Coordinator) GroupPartitions(ctx context.Context, group string) ([]tenure.Grant, error) {
	op := fmt.Sprintf("etcd: partitions of %q", group)
	if err := c.begin(ctx, op, tenure.ValidateKey(group)); err != nil {
		return nil, err
	}
	under := c.EtcdKey(group + "/")
	resp, err := c.client.Txn(ctx).Then(
		clientv3.OpGet(under, clientv3.WithPrefix()),
		clientv3.OpGet(c.membersKey(group), clientv3.WithPrefix()),
	).Commit()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	ms, err := c.members(ctx, group, resp.Responses[1].GetResponseRange().Kvs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	owners := make(map[int64]string) // lease → the ID of its membership
	for _, m := range ms {
		owners[int64(m.Epoch)] = m.ID
	}
	left := make(map[int64]time.Duration)
	var out []tenure.Grant
	for _, kv := range resp.Responses[0].GetResponseRange().Kvs {
		name := strings.TrimPrefix(string(kv.Key), under)
		if id, ok := owners[kv.Lease]; !ok || id != string(kv.Value) || inputs.PartitionName(name) != nil {
			continue
		}
		ttl, seen := left[kv.Lease]
		if !seen {
			if _, ttl, err = c.leaseTTL(ctx, clientv3.LeaseID(kv.Lease)); err != nil {
				return nil, fmt.Errorf("%s: %w", op, err)
			}
			left[kv.Lease] = ttl
		}
		if ttl >= 0 {
			out = append(out, tenure.Grant{Key: partition.Key(group, name), Holder: string(kv.Value), Token: uint64(kv.ModRevision), TTL: ttl})
		}
	}
	return out, nil
}

// CheckPartitions returns the grants of gs that m no longer owns, with one
// TimeToLive of m's lease listing the keys attached to it: a partition key
// is created on m's lease by m's claim and written again only by m's own
// claims, so a key still attached is m's (with the token of its latest
// claim: a grant m superseded is not reported lost), and
// one deleted by anyone (a release, `tenure release --force`, etcdctl del)
// is no longer attached, even once another member re-created it on its own
// lease. If the lease has expired or was revoked, the error wraps
// tenure.ErrLost.
func (c *Coordinator) CheckPartitions(ctx context.Context, m partition.Member, gs []tenure.Grant) ([]tenure.Grant, error) {
	op := fmt.Sprintf("etcd: check %d partitions of %s", len(gs), m)
	if err := validMember(m); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if err := c.begin(ctx, op); err != nil {
		return nil, err
	}
	resp, err := c.client.TimeToLive(ctx, clientv3.LeaseID(m.Epoch), clientv3.WithAttachedKeys())
	if isLeaseNotFound(err) || (err == nil && resp.TTL < 0) {
		return nil, fmt.Errorf("%s: %w: lease %x expired or was revoked", op, tenure.ErrLost, m.Epoch)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	attached := make(map[string]bool, len(resp.Keys))
	for _, k := range resp.Keys {
		attached[string(k)] = true
	}
	var lost []tenure.Grant
	for _, g := range gs {
		if !attached[c.EtcdKey(g.Key)] {
			lost = append(lost, g)
		}
	}
	return lost, nil
}
