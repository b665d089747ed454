package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure/internal/reach"
	"github.com/tenure-dev/tenure/internal/zapslog"
)

// DefaultDialTimeout bounds Dial when Config.DialTimeout is zero.
const DefaultDialTimeout = 5 * time.Second

// Config says how to reach an etcd cluster, for Dial.
type Config struct {
	// Endpoints are the cluster's client URLs ("http://10.0.0.1:2379",
	// "https://etcd.example:2379") or host:port pairs. Required.
	Endpoints []string

	// DialTimeout bounds how long Dial waits for the cluster to answer.
	// Default DefaultDialTimeout (5s).
	DialTimeout time.Duration

	// Username and Password authenticate with etcd's user/password auth.
	// Both empty means no authentication.
	Username, Password string

	// TLS secures the connections; required for https:// endpoints (RootCAs
	// verifies the servers, Certificates authenticates the client).
	TLS *tls.Config
}

// Validate reports every problem with cfg, each wrapping ErrInvalidConfig
// and naming the field.
func (cfg Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
	}
	if len(cfg.Endpoints) == 0 {
		bad("Config.Endpoints is empty: name at least one etcd client URL")
	}
	for _, ep := range cfg.Endpoints {
		if err := checkEndpoint(ep); err != nil {
			bad("Config.Endpoints: %q: %v", ep, err)
			continue
		}
		if strings.HasPrefix(ep, "https://") && cfg.TLS == nil {
			bad("Config.Endpoints: %q is https but Config.TLS is nil", ep)
		}
	}
	if cfg.DialTimeout < 0 {
		bad("Config.DialTimeout (%s) must not be negative", cfg.DialTimeout)
	}
	if (cfg.Username == "") != (cfg.Password == "") && cfg.Username == "" {
		bad("Config.Password is set but Config.Username is empty")
	}
	return errors.Join(errs...)
}

// Dial connects to the etcd cluster cfg names and checks, within
// cfg.DialTimeout and what ctx allows, that it answers a linearizable read
// (which needs a quorum) with the credentials given. The Coordinator owns
// the connection: its Close closes it. opts are New's; WithLogger's logger
// also receives the etcd client's warnings and errors. The error wraps
// ErrUnreachable when no endpoint answered in time, ErrAuth when the
// credentials were refused or are required, and ErrInvalidConfig for a
// malformed Config or option.
func Dial(ctx context.Context, cfg Config, opts ...Option) (*Coordinator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c, err := newCoordinator(nil, true, opts)
	if err != nil {
		return nil, err
	}
	client, err := dialClient(ctx, c, cfg)
	if err != nil {
		c.cancel()
		return nil, err
	}
	c.client.Client = client
	return c, nil
}

// dialClient makes c's client for cfg and checks that the cluster answers.
func dialClient(ctx context.Context, c *Coordinator, cfg Config) (*clientv3.Client, error) {
	timeout := cfg.DialTimeout
	if timeout == 0 {
		timeout = DefaultDialTimeout
	}
	eps := strings.Join(cfg.Endpoints, ",")
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if refused := reach.Refused(ctx, cfg.Endpoints); refused != nil {
		return nil, fmt.Errorf("%w: etcd at %s: %w (nothing listens there)", ErrUnreachable, eps, refused)
	}
	client, err := clientv3.New(clientv3.Config{
		Endpoints:            cfg.Endpoints,
		DialTimeout:          timeout,
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 5 * time.Second,
		Username:             cfg.Username,
		Password:             cfg.Password,
		TLS:                  cfg.TLS,
		Logger:               zapslog.New(c.log, slog.LevelWarn),
	})
	if err != nil {
		return nil, dialError(eps, cfg.Username, timeout, err)
	}
	if err := answers(ctx, client, c.prefix, cfg, timeout); err != nil {
		client.Close()
		return nil, err
	}
	return client, nil
}

// answers checks that the cluster cl talks to answers a linearizable read
// (clientv3.New does not fail on unreachable endpoints; the read does). If
// it has not answered by half the timeout, it finds out in the meantime
// why, for the error message.
func answers(ctx context.Context, cl *clientv3.Client, prefix string, cfg Config, timeout time.Duration) error {
	whyc := make(chan string, 1)
	probeCtx, stopProbe := context.WithCancel(ctx)
	go func() {
		select {
		case <-time.After(timeout / 2):
			whyc <- reach.Diagnose(probeCtx, cfg.Endpoints, cfg.TLS)
		case <-probeCtx.Done():
			whyc <- ""
		}
	}()
	_, err := client{cl}.Get(ctx, prefix, clientv3.WithKeysOnly(), clientv3.WithLimit(1)) // refusals marked, as every call of the Coordinator
	stopProbe()
	why := <-whyc
	if err == nil {
		return nil
	}
	err = dialError(strings.Join(cfg.Endpoints, ","), cfg.Username, timeout, err)
	if why != "" {
		err = fmt.Errorf("%w (%s)", err, why)
	}
	return err
}

// dialError says why the dial of eps failed: refused credentials (ErrAuth),
// credentials accepted but a role without read permission
// (tenure.ErrRefused), no answer in time (ErrUnreachable), or err as it is.
func dialError(eps, user string, timeout time.Duration, err error) error {
	switch {
	case errors.Is(err, rpctypes.ErrPermissionDenied) || errors.Is(err, rpctypes.ErrGRPCPermissionDenied):
		return fmt.Errorf("etcd at %s accepted user %q, whose roles may not read tenure's keys (grant one of its roles read and write on the key prefix): %w", eps, user, refusal(err))
	case isAuthError(err) && user == "":
		return fmt.Errorf("%w: etcd at %s requires a user name and password: %w", ErrAuth, eps, err)
	case isAuthError(err):
		return fmt.Errorf("%w: etcd at %s refused user %q: %w", ErrAuth, eps, user, err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: no answer from etcd at %s within the dial timeout (%s): %w", ErrUnreachable, eps, timeout, err)
	default:
		return fmt.Errorf("etcd: dial %s: %w", eps, err)
	}
}
