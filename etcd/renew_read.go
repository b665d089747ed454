package etcd

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
)

// keepAliveAndRead sends Renew's KeepAliveOnce of lease id and its read of
// g's key (readGrant) at the same time, and returns the keepalive's reply,
// the read's error and the keepalive's error. known says whether g is a
// grant this coordinator made; for any other, whose lease Renew has just
// found with a read, the two go one after the other: keepalive, then read.
//
// Sending them together keeps what Renew promises. g's deadline counts from
// Sent, taken before either is sent, so no later than etcd's receipt of the
// keepalive, which starts the lease's new TTL. The read is linearizable and
// sent after Renew was called: a deletion or a takeover of the key that etcd
// applied before the read was sent is seen. Reading only once the
// keepalive's reply is in would also see one in the span of the
// keepalive's round trip, no more: one a moment after the read is missed
// either way and seen by the next Renew, and the grant's deadline, counted
// from Sent, is the same. The key the read finds as g's rides on g's lease
// (its lease changes only with a new put, which changes the token). The
// renewal is reported only when both succeed.
func (c *Coordinator) keepAliveAndRead(ctx context.Context, g tenure.Grant, id clientv3.LeaseID, known bool) (ka *clientv3.LeaseKeepAliveResponse, read, err error) {
	if !known {
		if ka, err = c.client.KeepAliveOnce(ctx, id); err != nil {
			return ka, nil, err
		}
		_, read = c.readGrant(ctx, g)
		return ka, read, nil
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, read = c.readGrant(ctx, g)
	}()
	ka, err = c.client.KeepAliveOnce(ctx, id)
	<-done
	return ka, read, err
}
