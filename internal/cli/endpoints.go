package cli

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"
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
