package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/pflag"

	"github.com/tenure-dev/tenure/embedded"
	"github.com/tenure-dev/tenure/etcd"
	"github.com/tenure-dev/tenure/partition"
	"github.com/tenure-dev/tenure/postgres"
)

// coordinatorFlags say how to reach the coordinator: an etcd cluster
// (default), a PostgreSQL database (--postgres) or Kubernetes Leases
// (--kubeconfig, or --namespace alone in a pod).
type coordinatorFlags struct {
	endpoints   []string
	dialTimeout time.Duration
	user        string
	password    string
	tlsCA       string
	tlsCert     string
	tlsKey      string
	postgres    string
	kubeconfig  string
	namespace   string

	// chosenBy says what chose the coordinator: a flag, its environment
	// twin, or the default (set by check).
	chosenBy string
	// chosen names the coordinator used, as "etcd at URL" (set by
	// openCoordinator): status and watch print it.
	chosen string
}

// etcdFlags are the flags only the etcd backend uses.
var etcdFlags = []string{"endpoints", "user", "password", "tls-ca", "tls-cert", "tls-key"}

// register adds the coordinator flags to fs.
func (f *coordinatorFlags) register(fs *pflag.FlagSet) {
	fs.StringSliceVar(&f.endpoints, "endpoints", []string{embedded.DefaultClientURL},
		"etcd client URLs, comma-separated (http://host:port or https://host:port)")
	fs.DurationVar(&f.dialTimeout, "dial-timeout", etcd.DefaultDialTimeout,
		"give up connecting to the coordinator after this long")
	fs.StringVar(&f.user, "user", "", "etcd user name (etcd's user/password authentication)")
	fs.StringVar(&f.password, "password", "", "etcd password; prefer TENURE_PASSWORD, which stays out of the process list")
	fs.StringVar(&f.tlsCA, "tls-ca", "", "PEM CA bundle that verifies the etcd servers (default: the system roots)")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "PEM client certificate presented to etcd (with --tls-key)")
	fs.StringVar(&f.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	fs.StringVar(&f.postgres, "postgres", "",
		`use PostgreSQL instead of etcd: a DSN ("postgres://user:pw@host/db" or "host=h dbname=db")`)
	registerKube(f, fs)
}

// backend names the coordinator the flags select, for messages.
func (f *coordinatorFlags) backend() string {
	switch {
	case f.postgres != "":
		return "postgres"
	case f.kube():
		return "kubernetes"
	}
	return "etcd"
}

// check reports flag combinations that cannot work, as usage errors.
func (f *coordinatorFlags) check(fs *pflag.FlagSet) error {
	var errs []error
	f.chosenBy = f.choice(fs)
	if other := f.backendFlag(fs); other != "" {
		for _, name := range etcdFlags {
			if fl := fs.Lookup(name); fl != nil && fl.Changed {
				errs = append(errs, fmt.Errorf("%s is for etcd; it cannot be used with %s", flagSetRef(fs, name), other))
			}
		}
	}
	errs = append(errs, f.checkKube()...)
	if f.dialTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--dial-timeout (%s) must be positive", f.dialTimeout))
	}
	if f.postgres != "" {
		if err := checkDSNScheme(f.postgres); err != nil {
			errs = append(errs, err)
		}
	}
	if f.postgres == "" && !f.kube() {
		errs = append(errs, checkEndpointTypos(f.endpoints)...)
		if len(f.endpoints) == 0 {
			errs = append(errs, errors.New("--endpoints is empty: name at least one etcd client URL"))
		}
		if (f.tlsCert == "") != (f.tlsKey == "") {
			errs = append(errs, errors.New("--tls-cert and --tls-key must be given together"))
		}
		if f.password != "" && f.user == "" {
			errs = append(errs, errors.New("--password (or TENURE_PASSWORD) is set but --user is empty"))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return &exitError{code: ExitUsage, err: err}
	}
	return nil
}

// tlsConfig returns the client TLS configuration the flags ask for, or nil
// when no TLS flag is set and no endpoint is https://.
func (f *coordinatorFlags) tlsConfig() (*tls.Config, error) {
	https := false
	for _, ep := range f.endpoints {
		https = https || strings.HasPrefix(ep, "https://")
	}
	if !https && f.tlsCA == "" && f.tlsCert == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.tlsCA != "" {
		pem, err := os.ReadFile(f.tlsCA)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca %s: no PEM certificate found", f.tlsCA)
		}
		cfg.RootCAs = pool
	}
	if f.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(f.tlsCert, f.tlsKey)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert %s / --tls-key %s: %w", f.tlsCert, f.tlsKey, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// openCoordinator connects to the coordinator the flags name, within
// --dial-timeout. It is the only place that knows the backends of run,
// status and watch.
func openCoordinator(ctx context.Context, f *coordinatorFlags, log *slog.Logger) (partition.Coordinator, error) {
	ctx, cancel := context.WithTimeout(ctx, f.dialTimeout)
	defer cancel()
	if f.kube() {
		return openKube(ctx, f, log)
	}
	if f.postgres != "" {
		// A DSN that does not parse is a usage error, told by Open alone.
		if _, err := pgxpool.ParseConfig(f.postgres); err == nil {
			f.announce(ctx, log, "PostgreSQL at "+postgres.RedactDSN(f.postgres))
		}
		c, err := postgres.Dial(ctx, f.postgres, postgres.WithLogger(log))
		if err != nil {
			if errors.Is(err, postgres.ErrInvalidDSN) {
				return nil, &exitError{code: ExitUsage, err: fmt.Errorf("--postgres: %w", err)}
			}
			if ctx.Err() != nil {
				return nil, fmt.Errorf("no answer from PostgreSQL at %s within --dial-timeout (%s): %w", postgres.RedactDSN(f.postgres), f.dialTimeout, err)
			}
			return nil, serverCauseFirst(err, f.postgres)
		}
		return c, nil
	}
	tlsCfg, err := f.tlsConfig()
	if err != nil {
		return nil, &exitError{code: ExitUsage, err: err}
	}
	// The etcd client's own warnings (every retry while a member is down)
	// are noise unless debugging (the coordinator logs at debug level only).
	var clientLog *slog.Logger
	if log.Enabled(ctx, slog.LevelDebug) {
		clientLog = log
	}
	cfg := etcd.Config{
		Endpoints:   f.endpoints,
		DialTimeout: f.dialTimeout,
		Username:    f.user,
		Password:    f.password,
		TLS:         tlsCfg,
	}
	if err := cfg.Validate(); err != nil {
		return nil, &exitError{code: ExitUsage, err: etcdFieldNames(err)}
	}
	f.announce(ctx, log, "etcd at "+strings.Join(f.endpoints, ","))
	c, err := etcd.Dial(ctx, cfg, etcd.WithLogger(clientLog))
	if err != nil {
		if errors.Is(err, etcd.ErrInvalidConfig) {
			return nil, &exitError{code: ExitUsage, err: etcdFieldNames(err)}
		}
		if errors.Is(err, etcd.ErrUnreachable) {
			return nil, plainServerHint(serverHint(err, f.endpoints, embedded.DefaultClientURL), f.endpoints)
		}
		return nil, err
	}
	return c, nil
}
