package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tenure-dev/tenure/internal/zapslog"
)

// DefaultDialTimeout bounds Dial when Config.DialTimeout is zero.
const DefaultDialTimeout = 5 * time.Second

// Config says how to reach an etcd cluster.
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

	// TLS secures the connections; required for https:// endpoints. Set
	// RootCAs to verify the servers and Certificates to authenticate with a
	// client certificate.
	TLS *tls.Config

	// Prefix is the etcd key prefix under which tenure keys live. Empty
	// means DefaultPrefix ("/tenure/leader/").
	Prefix string

	// Logger receives the etcd client's warnings and errors, and the
	// coordinator's debug records. Nil discards them.
	Logger *slog.Logger
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

// checkEndpoint accepts scheme://host:port with scheme http or https, and
// host:port.
func checkEndpoint(ep string) error {
	hostport := ep
	if strings.Contains(ep, "://") {
		u, err := url.Parse(ep)
		if err != nil {
			return err
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return fmt.Errorf("scheme %q: want http or https", u.Scheme)
		}
		if u.Path != "" && u.Path != "/" {
			return fmt.Errorf("unexpected path %q", u.Path)
		}
		hostport = u.Host
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return fmt.Errorf("want host:port or scheme://host:port: %w", err)
	}
	if host == "" || port == "" {
		return errors.New("want host:port or scheme://host:port")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %q: want a number from 1 to 65535", port)
	}
	if strings.Contains(host, "/") {
		return fmt.Errorf("host %q contains '/': want host:port or scheme://host:port", host)
	}
	return nil
}

// Dial connects to the etcd cluster cfg names, checks within
// cfg.DialTimeout that it answers (a linearizable read, which needs a
// quorum) and that the credentials are accepted, and returns a Coordinator
// that owns the connection: its Close closes it.
//
// Dial fails with an error wrapping ErrUnreachable when no endpoint answered
// in time, ErrAuth when the credentials were refused or are required, and
// ErrInvalidConfig for a malformed Config. It never waits longer than the
// dial timeout, or than ctx allows.
func Dial(ctx context.Context, cfg Config) (*Coordinator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	timeout := cfg.DialTimeout
	if timeout == 0 {
		timeout = DefaultDialTimeout
	}
	eps := strings.Join(cfg.Endpoints, ",")
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if refused := allRefused(ctx, cfg.Endpoints); refused != nil {
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
		Logger:               zapslog.New(cfg.Logger, slog.LevelWarn),
	})
	if err != nil {
		return nil, dialError(ctx, eps, cfg.Username, timeout, err)
	}
	opts := []Option{WithLogger(cfg.Logger)}
	if cfg.Prefix != "" {
		opts = append(opts, WithPrefix(cfg.Prefix))
	}
	c, err := newCoordinator(client, true, opts)
	if err == nil {
		err = answers(ctx, c, cfg, timeout)
	}
	if err != nil {
		client.Close()
		return nil, err
	}
	return c, nil
}

// answers checks that the cluster c talks to answers a linearizable read
// (clientv3.New does not fail on unreachable endpoints; the read does). If
// it has not answered by half the timeout, it finds out in the meantime
// why, for the error message.
func answers(ctx context.Context, c *Coordinator, cfg Config, timeout time.Duration) error {
	var (
		why       string
		probeDone = make(chan struct{})
	)
	probeCtx, stopProbe := context.WithCancel(ctx)
	go func() {
		defer close(probeDone)
		t := time.NewTimer(timeout / 2)
		defer t.Stop()
		select {
		case <-t.C:
			why = diagnose(probeCtx, cfg)
		case <-probeCtx.Done():
		}
	}()
	_, err := c.client.Get(ctx, c.prefix, clientv3.WithKeysOnly(), clientv3.WithLimit(1))
	stopProbe()
	<-probeDone
	if err == nil {
		return nil
	}
	err = dialError(ctx, strings.Join(cfg.Endpoints, ","), cfg.Username, timeout, err)
	if why != "" {
		err = fmt.Errorf("%w (%s)", err, why)
	}
	return err
}

// allRefused tries a TCP connection to every endpoint at once, and returns
// the error when every one of them refused it (nothing listens there, so
// waiting the dial timeout cannot help); nil as soon as one is accepted,
// or fails in any other way (which the dial then finds out about).
func allRefused(ctx context.Context, endpoints []string) error {
	errs := make(chan error, len(endpoints))
	for _, ep := range endpoints {
		go func() {
			hostport := ep
			if u, err := url.Parse(ep); err == nil && u.Host != "" {
				hostport = u.Host
			}
			var d net.Dialer
			conn, err := d.DialContext(ctx, "tcp", hostport)
			if err == nil {
				conn.Close()
			}
			errs <- err
		}()
	}
	var last error
	for range endpoints {
		err := <-errs
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return nil // the others' goroutines end with their dial
		}
		last = err
	}
	return last
}

// diagnose tries a plain connection (and TLS handshake) to every endpoint
// and says what went wrong, for an error message. It returns when ctx ends.
func diagnose(ctx context.Context, cfg Config) string {
	out := make([]string, len(cfg.Endpoints))
	var wg sync.WaitGroup
	for i, ep := range cfg.Endpoints {
		wg.Go(func() { out[i] = ep + ": " + probe(ctx, ep, cfg.TLS) })
	}
	wg.Wait()
	return strings.Join(out, "; ")
}

func probe(ctx context.Context, ep string, tlsCfg *tls.Config) string {
	hostport, secure := ep, tlsCfg != nil
	if u, err := url.Parse(ep); err == nil && u.Host != "" {
		hostport, secure = u.Host, u.Scheme == "https" || (u.Scheme != "http" && tlsCfg != nil)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", hostport)
	if err != nil {
		if ctx.Err() != nil {
			return "TCP connection not established"
		}
		return err.Error()
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		conn.SetDeadline(deadline)
	}
	if !secure || tlsCfg == nil {
		return "connection accepted, but no answer"
	}
	cfg := tlsCfg.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName, _, _ = net.SplitHostPort(hostport)
	}
	cfg.NextProtos = []string{"h2"}
	tc := tls.Client(conn, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		return "TLS: " + err.Error()
	}
	// TLS 1.3 servers reject a client certificate after the handshake:
	// the alert arrives with the first read.
	tc.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	var b [1]byte
	if _, err := tc.Read(b[:]); err != nil {
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			return "TLS: " + err.Error()
		}
	}
	return "TLS connection established, but no answer"
}

func dialError(ctx context.Context, eps, user string, timeout time.Duration, err error) error {
	switch {
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
