package etcd

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
)

// client is the etcd client as the Coordinator calls it: every call's
// error that etcd refused for good also wraps tenure.ErrRefused (see
// refusal), so that an Elector or a partition group stops instead of
// retrying it.
type client struct{ *clientv3.Client }

// Get reads key.
func (c client) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	resp, err := c.Client.Get(ctx, key, opts...)
	return resp, refusal(err)
}

// Put writes key.
func (c client) Put(ctx context.Context, key, val string, opts ...clientv3.OpOption) (*clientv3.PutResponse, error) {
	resp, err := c.Client.Put(ctx, key, val, opts...)
	return resp, refusal(err)
}

// Txn starts a transaction whose Commit's error is marked as refusal marks
// it.
func (c client) Txn(ctx context.Context) clientv3.Txn { return txn{c.Client.Txn(ctx)} }

// Grant grants a lease.
func (c client) Grant(ctx context.Context, ttl int64) (*clientv3.LeaseGrantResponse, error) {
	resp, err := c.Client.Grant(ctx, ttl)
	return resp, refusal(err)
}

// KeepAliveOnce renews a lease once.
func (c client) KeepAliveOnce(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseKeepAliveResponse, error) {
	resp, err := c.Client.KeepAliveOnce(ctx, id)
	return resp, refusal(err)
}

// Revoke revokes a lease.
func (c client) Revoke(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseRevokeResponse, error) {
	resp, err := c.Client.Revoke(ctx, id)
	return resp, refusal(err)
}

// TimeToLive reads a lease.
func (c client) TimeToLive(ctx context.Context, id clientv3.LeaseID, opts ...clientv3.LeaseOption) (*clientv3.LeaseTimeToLiveResponse, error) {
	resp, err := c.Client.TimeToLive(ctx, id, opts...)
	return resp, refusal(err)
}

// txn is a clientv3.Txn whose Commit's error is marked as refusal marks it.
type txn struct{ clientv3.Txn }

func (t txn) If(cs ...clientv3.Cmp) clientv3.Txn   { return txn{t.Txn.If(cs...)} }
func (t txn) Then(ops ...clientv3.Op) clientv3.Txn { return txn{t.Txn.Then(ops...)} }
func (t txn) Else(ops ...clientv3.Op) clientv3.Txn { return txn{t.Txn.Else(ops...)} }

func (t txn) Commit() (*clientv3.TxnResponse, error) {
	resp, err := t.Txn.Commit()
	return resp, refusal(err)
}

// refusals are etcd's answers that waiting does not change: a role
// without the permission, a password refused, no user name where etcd
// requires one. An expired or invalid auth token is not one (the client
// authenticates again), nor is a timeout, a lost leader or an
// unavailable member.
var refusals = []error{
	rpctypes.ErrPermissionDenied, rpctypes.ErrGRPCPermissionDenied,
	rpctypes.ErrAuthFailed, rpctypes.ErrGRPCAuthFailed,
	rpctypes.ErrUserEmpty, rpctypes.ErrGRPCUserEmpty,
}

// refusal returns err, wrapped with tenure.ErrRefused when it is one of
// refusals.
func refusal(err error) error {
	if err == nil || errors.Is(err, tenure.ErrRefused) {
		return err
	}
	for _, r := range refusals {
		if errors.Is(err, r) {
			return fmt.Errorf("%w: %w", tenure.ErrRefused, err)
		}
	}
	return err
}
