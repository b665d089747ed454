package etcd

import (
	"context"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// FirstOnLease is firstOnLease, for TestMemberWithMorePartitionsThanATxnHolds.
func (c *Coordinator) FirstOnLease(ctx context.Context, group string, mark *mvccpb.KeyValue, keys [][]byte) (string, error) {
	return c.firstOnLease(ctx, group, mark, keys)
}
