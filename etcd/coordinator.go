package etcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/tenure-dev/tenure/partition"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure"
)

// DefaultPrefix is the etcd key prefix under which tenure keys live, unless
// changed with WithPrefix. Users who read tenure's keys with
// etcdctl find them there.
const DefaultPrefix = "/tenure/leader/"

// Compile-time checks that Coordinator has every capability.
var (
	_ tenure.Coordinator       = (*Coordinator)(nil)
	_ partition.Coordinator    = (*Coordinator)(nil)
	_ partition.MembersWatcher = (*Coordinator)(nil)
)

// Coordinator is a tenure.Coordinator on etcd. It also implements
// partition.Coordinator and partition.MembersWatcher. It is safe for
// concurrent use.
type Coordinator struct {
	client     client // refusals marked: see refusal
	ownsClient bool
	prefix     string
	log        *slog.Logger

	// ctx is cancelled by Close; watch goroutines end with it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	closed bool
	spares map[spareKey]lease // leases granted ahead, one per key and holder (grant.go)
	leases map[string]granted // key → the last grant made on it here, and its lease (grant.go)

	memberTTLs grantedTTLs // membership leases' granted TTLs (group_foreign.go)
	firstMarks firstMarks  // marks found first on their lease (group_mark_first.go)
}

// An Option configures a Coordinator, for New or Dial.
type Option func(*Coordinator)

// WithPrefix sets the etcd key prefix under which tenure keys live. Default
// DefaultPrefix. A prefix normally ends with "/". One prefix per
// application keeps several applications' keys apart in one cluster, as
// long as no application's prefix begins another's: under "/app/" and
// "/app/x/", key "x/jobs" of the first is key "jobs" of the second.
func WithPrefix(prefix string) Option {
	return func(c *Coordinator) { c.prefix = prefix }
}

// WithLogger sets where the coordinator logs (at debug level: grants and
// watch failures); with Dial, the etcd client's warnings and errors too.
// Nil, the default, discards.
func WithLogger(l *slog.Logger) Option {
	return func(c *Coordinator) { c.log = l }
}

// New returns a Coordinator that talks to etcd through client. The caller
// keeps ownership of client: Close does not close it, and the caller must not
// close it before closing the Coordinator. Dial makes a client of its own.
func New(client *clientv3.Client, opts ...Option) (*Coordinator, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: nil etcd client", ErrInvalidConfig)
	}
	return newCoordinator(client, false, opts)
}

func newCoordinator(cl *clientv3.Client, owns bool, opts []Option) (*Coordinator, error) {
	c := &Coordinator{
		client:     client{cl},
		ownsClient: owns,
		prefix:     DefaultPrefix,
		spares:     make(map[spareKey]lease),
		leases:     make(map[string]granted),
	}
	for _, opt := range opts {
		opt(c)
	}
	if c.prefix == "" {
		return nil, fmt.Errorf("%w: empty key prefix (WithPrefix); tenure keys would mix with every other key", ErrInvalidConfig)
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c, nil
}

// Client returns the etcd client the coordinator uses.
func (c *Coordinator) Client() *clientv3.Client { return c.client.Client }

// EtcdKey returns the etcd key that holds tenure key key.
func (c *Coordinator) EtcdKey(key string) string { return c.prefix + key }

// Close stops the coordinator's watches and, if it made its client (Dial),
// closes the client. It does not release grants: they expire on their own.
// Later calls return errors matching tenure.ErrClosed. Close is idempotent.
func (c *Coordinator) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
	if c.ownsClient {
		// clientv3's Close reports the cancellation of its own context.
		if err := c.client.Close(); err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("etcd: close client: %w", err)
		}
	}
	return nil
}

// begin starts operation op: it returns the first of invalid (the checks of
// op's arguments) that is not nil, else an error if the coordinator is
// closed or ctx has ended, each prefixed with op.
func (c *Coordinator) begin(ctx context.Context, op string, invalid ...error) error {
	for _, err := range invalid {
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return fmt.Errorf("%s: %w", op, tenure.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// ttlSeconds is ttl rounded up to whole seconds, as etcd leases are.
func ttlSeconds(ttl time.Duration) int64 {
	return int64((ttl + time.Second - 1) / time.Second)
}

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
