package etcd

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
)

// keepAliveAndRead sends Renew's KeepAliveOnce of lease id and its read of
// g's key (readGrant) at the same time, and returns the keepalive's reply
// and error and the read's error. known says whether g is a grant this
// coordinator made; for any other, whose lease Renew has just found with a
// read, the two go one after the other as before: keepalive, then read.
//
// Sending them together keeps what Renew promises. g's deadline counts from
// Sent, taken before either is sent, so no later than etcd's receipt of the
// keepalive, which starts the lease's new TTL. The read is linearizable and
// sent after Renew was called: a deletion or a takeover of the key that etcd
// applied before the call is seen, as when the read followed the keepalive's
// reply. What the order added was only the span of the keepalive's round
// trip, in which a deletion could come; one a moment after the read was
// served is missed either way, and is seen by the next Renew, which is what
// the deadline, counted from Sent, leaves room for. The renewal is reported
// only when both succeed.
func (c *Coordinator) keepAliveAndRead(ctx context.Context, g tenure.Grant, id clientv3.LeaseID, known bool) (*clientv3.LeaseKeepAliveResponse, error, error) {
	if !known {
		ka, err := c.client.KeepAliveOnce(ctx, id)
		if err != nil {
			return ka, err, nil
		}
		_, read := c.readGrant(ctx, g)
		return ka, nil, read
	}
	var read error
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, read = c.readGrant(ctx, g)
	}()
	ka, err := c.client.KeepAliveOnce(ctx, id)
	<-done
	return ka, err, read
}
