package etcd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// joinCheck says what makes the lease of mark, which JoinGroup has just
// put with the membership key of id in group on the lease it granted for
// ttl, no lease of that membership alone: empty when the lease carries
// those two keys and nothing else and was granted for ttl.
//
// Another program may put a key on any lease at any time. One put before
// the mark would make the membership no member (see firstOnLease); one put
// after it, before this check, would ride on a member's lease that the
// member does not own, renewed by it and listed as foreign for as long as
// it runs. It may also revoke the lease while it carries nothing (between
// its grant and JoinGroup's put) and grant its ID again (etcd's LeaseGrant
// takes an ID) for a shorter TTL: the membership would ride on a lease
// that ends before the TTL JoinGroup reports, and another member could
// claim its partitions while it owns them by that TTL. (A lease granted
// again for ttl began after JoinGroup's grant was sent, so it ends no
// sooner than JoinGroup reports.) JoinGroup hands out neither: it asks
// etcd for the lease's TTL and keys, one request, and judges every key it
// does not own, whenever it was created. A lease that expired before the
// check is judged too: the membership is gone with it.
func (c *Coordinator) joinCheck(ctx context.Context, group, id string, ttl time.Duration, mark *mvccpb.KeyValue) (string, error) {
	l := clientv3.LeaseID(mark.Lease)
	ls, err := c.leaseKeys(ctx, l)
	if err != nil {
		return "", err
	}
	if ls.left < 0 {
		return "a lease that expired before its check", nil
	}
	if ls.granted != ttl {
		return fmt.Sprintf("a lease revoked and granted again under its ID for %s, not the %s granted", ls.granted, ttl), nil
	}
	own := map[string]bool{string(mark.Key): true, c.memberKey(group, l, id): true}
	for _, k := range ls.keys {
		if !own[string(k)] {
			return fmt.Sprintf("a lease that carries %q beside its membership", strings.TrimPrefix(string(k), c.prefix)), nil
		}
	}
	if len(ls.keys) != len(own) { // each is one of its own: one is gone
		// Revoked since the put (its keys with it) and granted again under
		// its ID: the membership rides on nothing.
		return "a lease that no longer carries its membership key and mark", nil
	}
	// The mark is first on its lease: firstOnLease remembers it, given the
	// keys, without another request.
	return c.firstOnLease(ctx, group, mark, ls.keys)
}
