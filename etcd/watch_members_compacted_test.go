package etcd_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestWatchMembersFromACompactedRevision: etcd compacts its history past
// the revision WatchMembers read, before the watch is set up (the watch's
// request is held until the compaction is done). The changes since that
// revision can no longer be watched: the channel must close, so that the
// member polls GroupMembers, rather than stay open and never tell of a
// member that joins.
func TestWatchMembersFromACompactedRevision(t *testing.T) {
	t.Parallel()
	eps := startEtcd(t)
	plain := newClient(t, eps)
	var armed atomic.Bool
	cl := hookedClient(t, eps, rpcHooks{call: func(ctx context.Context, method string, _ any) error {
		if method != rpcWatch || !armed.CompareAndSwap(true, false) {
			return nil
		}
		var put *clientv3.PutResponse
		for range 2 { // etcd keeps the revision compacted at: compact past the one watched from
			var err error
			if put, err = plain.Put(ctx, "compact/me", "x"); err != nil {
				return err
			}
		}
		_, err := plain.Compact(ctx, put.Header.Revision, clientv3.WithCompactPhysical())
		return err
	}})
	c := newCoordinator(t, cl)
	watch, stop := context.WithCancel(context.Background())
	defer stop()
	armed.Store(true)
	ch, err := c.WatchMembers(watch, "g")
	if err != nil {
		t.Fatal(err)
	}
	<-ch // the first read, sent at once
	mustJoin(t, newCoordinator(t, plain), "g", "a#1", 5*time.Second)
	limit := time.After(30 * time.Second) // liveness slack for a loaded machine
	for {
		select {
		case _, open := <-ch:
			if open {
				t.Fatal("WatchMembers told a change from a compacted revision: the compaction missed the watch, the test tested nothing")
			}
			return // closed: the member polls
		case <-limit:
			t.Fatal("WatchMembers from a compacted revision: no news and no close 30s after a member joined")
		}
	}
}
