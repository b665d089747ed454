package cli

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tenure-dev/tenure/postgres"
)

// checkEndpointTypos finds endpoints that are URLs with a mangled "://"
// ("http//127.0.0.1:2379", "https:/h:2379"), which etcd would otherwise
// take for a host name, and names the fix.
func checkEndpointTypos(eps []string) []error {
	var errs []error
	for _, ep := range eps {
		for _, scheme := range []string{"https", "http"} {
			rest, ok := strings.CutPrefix(ep, scheme)
			if !ok || strings.HasPrefix(rest, "://") {
				continue
			}
			if host := strings.TrimLeft(rest, ":/"); host != rest {
				errs = append(errs, fmt.Errorf("--endpoints %q is not a URL: use %s://%s", ep, scheme, host))
			}
			break
		}
	}
	return errs
}

// checkDSNScheme rejects a --postgres URL of another database, naming the
// fix. Keyword/value DSNs ("host=h dbname=db") have no scheme.
func checkDSNScheme(dsn string) error {
	scheme, _, ok := strings.Cut(dsn, "://")
	if !ok || scheme == "postgres" || scheme == "postgresql" {
		return nil
	}
	// Only the scheme is shown: the rest may hold a password.
	return fmt.Errorf(`--postgres %s://…: %q is not PostgreSQL: use postgres://user:password@host:5432/dbname (or "host=… dbname=…")`,
		quoteScheme(scheme), scheme)
}

// quoteScheme shows at most 20 bytes of a scheme.
func quoteScheme(s string) string {
	if len(s) > 20 {
		return s[:20] + "…"
	}
	return s
}

// etcdFieldNames rewrites the etcd package's Config field names in err as
// the flags that set them.
func etcdFieldNames(err error) error {
	return errors.New(strings.NewReplacer(
		"Config.Endpoints", "--endpoints",
		"Config.DialTimeout", "--dial-timeout",
		"Config.Username", "--user",
		"Config.Password", "--password",
		"Config.TLS", "--tls-ca/--tls-cert",
	).Replace(errorMessage(err)))
}

// serverHint adds to err, a failure to reach eps, the advice to start
// "tenure server" when eps is defaultURL alone and nothing listens there.
func serverHint(err error, eps []string, defaultURL string) error {
	if !slices.Equal(eps, []string{defaultURL}) {
		return err
	}
	u, perr := url.Parse(defaultURL)
	if perr != nil {
		return err
	}
	c, derr := net.DialTimeout("tcp", u.Host, time.Second)
	if derr == nil {
		c.Close()
		return err
	}
	if !errors.Is(derr, syscall.ECONNREFUSED) {
		return err
	}
	return fmt.Errorf("%w\nnothing listens on %s, the default --endpoints: is \"tenure server\" running? Start it in another terminal with: tenure server (or name your etcd with --endpoints)", err, defaultURL)
}

// pgCauseError is a connection failure told by the server's own answer,
// without the attempts before it (pgx tries TLS first, and reports
// "server refused TLS connection" before the wrong password).
type pgCauseError struct {
	msg string
	err error
}

func (e *pgCauseError) Error() string { return e.msg }
func (e *pgCauseError) Unwrap() error { return e.err }

// errServerNoTLS marks a connection that asked for TLS (sslmode=require,
// verify-ca, verify-full) to a PostgreSQL server that does not offer it:
// a configuration to fix, not a server to wait for.
var errServerNoTLS = errors.New("the server does not accept TLS")

// serverCauseFirst leads err with what PostgreSQL answered, when it
// answered, and says what to do about it.
func serverCauseFirst(err error, dsn string) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		if strings.Contains(err.Error(), "server refused TLS connection") { // pgconn has no error type for it
			return &pgCauseError{err: errors.Join(errServerNoTLS, err), msg: fmt.Sprintf(
				"PostgreSQL at %s does not accept TLS, which its sslmode requires: enable ssl on the server, or set sslmode=prefer or disable in --postgres", postgres.RedactDSN(dsn))}
		}
		return err
	}
	hint := map[string]string{
		"28P01": "check the user and password in --postgres (or TENURE_POSTGRES)",
		"28000": "the server's pg_hba.conf lets this user not connect from here to this database",
		"3D000": "create the database, or name another one in --postgres",
		"42501": "grant the role CONNECT on the database",
		"42704": "a parameter in --postgres is neither a libpq connection parameter (sslmode, connect_timeout, …) nor a server setting: check its spelling",
	}[pgErr.Code]
	if pgErr.Code == "28000" && strings.Contains(pgErr.Message, "does not exist") {
		// PostgreSQL answers a missing role with the pg_hba code too.
		hint = "create the role (CREATE ROLE … LOGIN), or name another user in --postgres"
	}
	msg := fmt.Sprintf("PostgreSQL at %s refused the connection: %s (SQLSTATE %s)", postgres.RedactDSN(dsn), pgErr.Message, pgErr.Code)
	if hint != "" {
		msg += ": " + hint
	}
	return &pgCauseError{msg: msg, err: err}
}

// plainServerHint adds to err, a failure to reach eps, the advice to use
// http:// for each https:// endpoint whose server does not speak TLS
// (etcd without TLS closes the connection on a TLS hello: "EOF").
func plainServerHint(err error, eps []string) error {
	var plain []string
	for _, ep := range eps {
		u, perr := url.Parse(ep)
		if perr != nil || u.Scheme != "https" {
			continue
		}
		// A handshake only, to learn whether the server speaks TLS at all:
		// nothing is sent over it, so its certificate does not matter.
		c, derr := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", u.Host, &tls.Config{InsecureSkipVerify: true})
		if derr == nil {
			c.Close()
			continue
		}
		var rec tls.RecordHeaderError
		if errors.Is(derr, io.EOF) || errors.As(derr, &rec) {
			plain = append(plain, "http://"+u.Host)
		}
	}
	if len(plain) == 0 {
		return err
	}
	return fmt.Errorf("%w\nthe server does not speak TLS: if it is a plain server, use --endpoints %s", err, strings.Join(plain, ","))
}
