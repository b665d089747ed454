package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"

	"github.com/tenure-dev/tenure"
)

// Compile-time checks that Coordinator has every capability.
var _ tenure.Coordinator = (*Coordinator)(nil)

// Coordinator is a tenure.Coordinator on Kubernetes Leases
// (coordination.k8s.io/v1), one Lease per key in one namespace. It also
// implements partition.Coordinator. It is safe for concurrent use. See the
// package documentation for how it decides that a Lease has expired. New
// and Dial make one.
type Coordinator struct {
	client kubernetes.Interface
	leases coordclient.LeaseInterface
	cfg    config
	log    *slog.Logger

	// ctx is cancelled by Close; watch goroutines end with it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	closed bool
	seen   map[string]record // Lease name → the newest version seen, and when first (sight.go)
}

// New returns a Coordinator that keeps its Leases in namespace through
// client, which the caller keeps (Close does not touch it). It makes no
// request: a server it cannot reach, or whose resourceVersions are not
// comparable, fails the first call. Errors wrap tenure.ErrInvalidConfig
// and name every unusable argument and option.
func New(client kubernetes.Interface, namespace string, opts ...Option) (*Coordinator, error) {
	cfg := newConfig(namespace, opts)
	var errs []error
	if client == nil {
		errs = append(errs, fmt.Errorf("%w: kube: nil Kubernetes client", tenure.ErrInvalidConfig))
	}
	if err := cfg.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	c := &Coordinator{
		client: client,
		leases: markedLeases{client.CoordinationV1().Leases(cfg.Namespace)}, // refusals marked: see refusal
		cfg:    cfg,
		log:    cfg.Logger,
		seen:   make(map[string]record),
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c, nil
}

// Dial makes a Kubernetes client of its own from rc (a kubeconfig's, or
// rest.InClusterConfig's), checks within ctx that the API server answers
// (it asks its /version), and returns New's Coordinator on it, keeping its
// Leases in namespace.
func Dial(ctx context.Context, rc *rest.Config, namespace string, opts ...Option) (*Coordinator, error) {
	if rc == nil {
		return nil, fmt.Errorf("%w: kube: nil rest.Config", tenure.ErrInvalidConfig)
	}
	if err := newConfig(namespace, opts).validate(); err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("%w: kube: client for %s: %w", tenure.ErrInvalidConfig, rc.Host, err)
	}
	if _, err := client.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Raw(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", err, ctx.Err())
		}
		return nil, fmt.Errorf("kube: Kubernetes API server at %s: %w", rc.Host, refusal(err))
	}
	return New(client, namespace, opts...)
}

// Namespace returns the namespace that holds the Leases.
func (c *Coordinator) Namespace() string { return c.cfg.Namespace }

// Client returns the Kubernetes client the coordinator uses.
func (c *Coordinator) Client() kubernetes.Interface { return c.client }

// Close stops the coordinator's watches. It does not release grants: they
// expire on their own. Later calls return errors matching
// tenure.ErrClosed. Close is idempotent.
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
	return nil
}

// begin checks that the coordinator is open and ctx has not ended.
func (c *Coordinator) begin(ctx context.Context, op string) error {
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

// fail wraps err, from a request made with ctx, for operation op: with
// ctx's error too when ctx has ended, so that callers can match it.
func fail(ctx context.Context, op string, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%s: %w: %w", op, cerr, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// ttlSeconds is ttl rounded up to whole seconds, as leaseDurationSeconds
// is.
func ttlSeconds(ttl time.Duration) int32 {
	return int32((ttl + time.Second - 1) / time.Second)
}
