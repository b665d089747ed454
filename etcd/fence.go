package etcd

import (
	"context"
	"fmt"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/fence"
)

// FencedTxn commits ops, writes to etcd that only the leader may make, in one
// transaction if and only if g is still the live grant on its key: the
// transaction compares the key's mod revision with g's token and its value
// with g's holder. Otherwise nothing is written, and the error is a
// *fence.StaleError (matching tenure.ErrStaleToken) whose Required is the
// token of the grant that replaced g or, when the key is free, the lowest
// token a new grant can have. ops must not touch the election key itself.
func (c *Coordinator) FencedTxn(ctx context.Context, g tenure.Grant, ops ...clientv3.Op) (*clientv3.TxnResponse, error) {
	op := fmt.Sprintf("etcd: fenced txn by %s", g)
	if err := c.begin(ctx, op, g.Validate()); err != nil {
		return nil, err
	}
	ek := c.EtcdKey(g.Key)
	resp, err := c.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(ek), "=", int64(g.Token)),
			clientv3.Compare(clientv3.Value(ek), "=", g.Holder)).
		Then(ops...).
		Else(clientv3.OpGet(ek)).
		Commit()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if resp.Succeeded {
		return resp, nil
	}
	stale := &fence.StaleError{Presented: g.Token}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	switch {
	case len(kvs) == 0:
		stale.Required = uint64(resp.Header.Revision) + 1
		return nil, fmt.Errorf("%s: key is free: %w", op, stale)
	case uint64(kvs[0].ModRevision) > g.Token:
		stale.Required = uint64(kvs[0].ModRevision)
		return nil, fmt.Errorf("%s: key now held by %q: %w", op, kvs[0].Value, stale)
	default:
		return nil, fmt.Errorf("%s: %w: key is held by %q with token %d; this grant was never made", op, tenure.ErrInvalidGrant, kvs[0].Value, kvs[0].ModRevision)
	}
}

// tokenWidth is the width of a token as a register stores it: zero-padded
// decimal, so that etcd's byte-wise comparison of values orders tokens
// numerically.
const tokenWidth = 20

func formatToken(t uint64) string { return fmt.Sprintf("%0*d", tokenWidth, t) }

func parseToken(b []byte) (uint64, error) {
	if len(b) != tokenWidth {
		return 0, fmt.Errorf("want %d decimal digits", tokenWidth)
	}
	return strconv.ParseUint(string(b), 10, 64)
}

// Register is a fenced resource kept in etcd: an etcd key holding the highest
// fencing token accepted so far, and writes that commit only together with
// it. A write presenting a lower token is rejected and changes nothing; the
// same token is accepted (the same term writing again). Unlike FencedTxn it
// needs the grant to be the newest that wrote, not to be live: it protects
// data in etcd written by successive leaders, as a fenced database row does.
type Register struct {
	client *clientv3.Client
	key    string
}

// NewRegister returns a Register that keeps its highest token in etcd key
// key (created by the first write). The token is stored as 20 zero-padded
// decimal digits. One Register guards one resource (see the Register
// example). Keep key outside every coordinator's prefix: there it is a
// record no coordinator wrote, which ListForeign lists and RemoveForeign
// (tenure release --force) deletes, and a deleted register accepts older
// tokens again.
func NewRegister(client *clientv3.Client, key string) *Register {
	return &Register{client: client, key: key}
}

// Key returns the etcd key that holds the register's token.
func (r *Register) Key() string { return r.key }

// Write commits ops and records token as the highest accepted, in one
// transaction, if token is at least the highest accepted so far; otherwise
// nothing is written and the error is a *fence.StaleError (matching
// tenure.ErrStaleToken). Token 0 is rejected with fence.ErrMissingToken. ops
// must not touch the register's key. In the response, Responses[0] is the
// put of the register's key and the results of ops follow, in order.
func (r *Register) Write(ctx context.Context, token uint64, ops ...clientv3.Op) (*clientv3.TxnResponse, error) {
	op := fmt.Sprintf("etcd: register %q: write with token %d", r.key, token)
	if token == 0 {
		return nil, fmt.Errorf("%s: %w: token 0 is never granted", op, fence.ErrMissingToken)
	}
	tok := formatToken(token)
	then := append([]clientv3.Op{clientv3.OpPut(r.key, tok)}, ops...)
	// Write if the key does not exist yet, or if its value is not greater
	// than tok. (etcd's value comparison fails on a missing key, hence the
	// nesting; it has no "<=", hence the inverted inner transaction.)
	resp, err := r.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(r.key), "=", 0)).
		Then(then...).
		Else(clientv3.OpTxn(
			[]clientv3.Cmp{clientv3.Compare(clientv3.Value(r.key), ">", tok)},
			[]clientv3.Op{clientv3.OpGet(r.key)},
			then,
		)).
		Commit()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if resp.Succeeded {
		return resp, nil
	}
	inner := resp.Responses[0].GetResponseTxn()
	if !inner.Succeeded {
		written := (*clientv3.TxnResponse)(inner)
		written.Header = resp.Header
		return written, nil
	}
	kvs := inner.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return nil, fmt.Errorf("%s: register key vanished during the transaction; nothing written", op)
	}
	highest, err := parseToken(kvs[0].Value)
	if err != nil {
		return nil, fmt.Errorf("%s: register key holds %q, not a token (%v); nothing written", op, kvs[0].Value, err)
	}
	return nil, fmt.Errorf("%s: %w", op, &fence.StaleError{Presented: token, Required: highest})
}

// Token returns the highest token the register has accepted, 0 if none.
func (r *Register) Token(ctx context.Context) (uint64, error) {
	resp, err := r.client.Get(ctx, r.key)
	if err != nil {
		return 0, fmt.Errorf("etcd: register %q: read token: %w", r.key, err)
	}
	if len(resp.Kvs) == 0 {
		return 0, nil
	}
	t, err := parseToken(resp.Kvs[0].Value)
	if err != nil {
		return 0, fmt.Errorf("etcd: register %q: key holds %q, not a token: %v", r.key, resp.Kvs[0].Value, err)
	}
	return t, nil
}
