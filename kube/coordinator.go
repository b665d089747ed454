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
// and NewForConfig make one.
type Coordinator struct {
	client kubernetes.Interface
	leases coordclient.LeaseInterface
	cfg    Config
	log    *slog.Logger

	// ctx is cancelled by Close; watch goroutines end with it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	closed bool
	seen   map[string]record // Lease name → the newest version seen, and when first (sight.go)
}

// New returns a Coordinator that keeps its Leases in cfg.Namespace through
// client. It makes no request: a server it cannot reach, or whose
// resourceVersions are not comparable, fails the first call. Users with a
// client-go clientset call it, as the tenure command does.
func New(client kubernetes.Interface, cfg Config) (*Coordinator, error) {
	var errs []error
	if client == nil {
		errs = append(errs, fmt.Errorf("%w: kube: nil Kubernetes client", tenure.ErrInvalidConfig))
	}
	if err := cfg.Validate(); err != nil {
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

// NewForConfig returns a Coordinator with a client of its own made from
// rc (a kubeconfig's, or rest.InClusterConfig's). See New. Users in a pod
// call it with rest.InClusterConfig.
func NewForConfig(rc *rest.Config, cfg Config) (*Coordinator, error) {
	if rc == nil {
		return nil, fmt.Errorf("%w: kube: nil rest.Config", tenure.ErrInvalidConfig)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("%w: kube: client for %s: %w", tenure.ErrInvalidConfig, rc.Host, err)
	}
	return New(client, cfg)
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
