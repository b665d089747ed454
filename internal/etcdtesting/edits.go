package etcdtesting

import (
	"context"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/tenuretest"
)

// Edits are tenuretest's edits of a grant's record on etcd through cl, as
// another program with etcd's credentials could make them (etcdKey is the
// coordinator's EtcdKey). etcd cannot change a live lease's TTL: Lengthen
// and Shorten revoke the grant's lease, which deletes its key, and grant a
// lease of the same ID with the new TTL (in whole seconds, at least one),
// revoked again when the test ends. Remove revokes the lease.
func Edits(cl *clientv3.Client, etcdKey func(key string) string) tenuretest.Edits {
	regrant := func(tb testing.TB, g tenure.Grant, d time.Duration) {
		tb.Helper()
		id := leaseOf(tb, cl, etcdKey, g)
		revoke(tb, cl, id)
		secs := max(int64((d+time.Second-1)/time.Second), 1)
		if _, err := pb.NewLeaseClient(cl.ActiveConnection()).LeaseGrant(Ctx(tb), &pb.LeaseGrantRequest{ID: int64(id), TTL: secs}); err != nil {
			tb.Fatalf("grant lease %x again for %ds: %v", int64(id), secs, err)
		}
		tb.Cleanup(func() {
			// tb's context has ended by now: the revocation gets its own.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, _ = cl.Revoke(ctx, id)
		})
	}
	return tenuretest.Edits{
		Lengthen: regrant,
		Shorten:  regrant,
		Remove: func(tb testing.TB, g tenure.Grant) {
			tb.Helper()
			revoke(tb, cl, leaseOf(tb, cl, etcdKey, g))
		},
	}
}

// leaseOf returns the lease that g's key rides on, failing tb unless the key
// is still g's.
func leaseOf(tb testing.TB, cl *clientv3.Client, etcdKey func(string) string, g tenure.Grant) clientv3.LeaseID {
	tb.Helper()
	resp, err := cl.Get(Ctx(tb), etcdKey(g.Key))
	if err != nil || len(resp.Kvs) != 1 || uint64(resp.Kvs[0].ModRevision) != g.Token || resp.Kvs[0].Lease == 0 {
		tb.Fatalf("Get(%q) = %v, %v; want %v's key on its lease", etcdKey(g.Key), resp, err, g)
	}
	return clientv3.LeaseID(resp.Kvs[0].Lease)
}

func revoke(tb testing.TB, cl *clientv3.Client, id clientv3.LeaseID) {
	tb.Helper()
	if _, err := cl.Revoke(Ctx(tb), id); err != nil {
		tb.Fatalf("revoke lease %x: %v", int64(id), err)
	}
}
