package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/etcd"
	"github.com/tenure-dev/tenure/postgres"
)

// ErrInvalidOptions is wrapped by every error about a benchmark's options.
var ErrInvalidOptions = errors.New("bench: invalid options")

// Target is the coordinator a benchmark runs against: an etcd cluster, a
// PostgreSQL database when Postgres is set, or a Kubernetes API server when
// Kubeconfig is set.
type Target struct {
	// Endpoints are the etcd client URLs.
	Endpoints []string
	// Postgres is a PostgreSQL DSN; when set, Endpoints are not used.
	Postgres string
	// Kubeconfig is a kubeconfig file; when set, the benchmark runs on
	// Leases in Namespace (default: the file's context's namespace), and
	// Endpoints are not used.
	Kubeconfig string
	// Namespace is the Kubernetes namespace of the Leases.
	Namespace string
	// Progress receives progress lines (nil: none).
	Progress io.Writer
}

// Backend names the coordinator: "etcd", "postgres" or "kubernetes".
func (t Target) Backend() string {
	switch {
	case t.Postgres != "":
		return "postgres"
	case t.Kubeconfig != "":
		return "kubernetes"
	}
	return "etcd"
}

func (t Target) validate() error {
	if t.Postgres == "" && t.Kubeconfig == "" && len(t.Endpoints) == 0 {
		return fmt.Errorf("%w: no etcd endpoints and no PostgreSQL DSN", ErrInvalidOptions)
	}
	return nil
}

// coordinator opens a tenure coordinator on the target, with its own
// connections. pgOpts apply on PostgreSQL only.
func (t Target) coordinator(ctx context.Context, pgOpts ...postgres.Option) (tenure.Coordinator, error) {
	if t.Postgres != "" {
		return postgres.Dial(ctx, t.Postgres, pgOpts...)
	}
	if t.Kubeconfig != "" {
		return t.kubeCoordinator()
	}
	return etcd.Dial(ctx, etcd.Config{Endpoints: t.Endpoints}, etcd.WithPrefix("/tenure-bench/"))
}

// etcdClient opens a client of its own on the etcd target.
func (t Target) etcdClient(ctx context.Context) (*clientv3.Client, error) {
	cl, err := clientv3.New(clientv3.Config{Endpoints: t.Endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop(), Context: ctx})
	if err != nil {
		return nil, fmt.Errorf("bench: connect to etcd %v: %w", t.Endpoints, err)
	}
	return cl, nil
}

// pool opens a pool of its own on the PostgreSQL target with at least
// conns connections.
func (t Target) pool(ctx context.Context, conns int) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(t.Postgres)
	if err != nil {
		return nil, fmt.Errorf("%w: --postgres: %v", ErrInvalidOptions, postgres.RedactDSN(t.Postgres))
	}
	cfg.MaxConns = max(cfg.MaxConns, int32(conns))
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("bench: connect to %s: %w", postgres.RedactDSN(t.Postgres), err)
	}
	return p, nil
}

// progress writes a progress line to the target's Progress writer.
func (t Target) progress(format string, args ...any) {
	if t.Progress != nil {
		fmt.Fprintf(t.Progress, format+"\n", args...)
	}
}

// runID returns a short random name for this run's keys, so that runs never
// meet each other's keys.
func runID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
