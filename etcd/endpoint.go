package etcd

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// checkEndpoint accepts an endpoint only in a form the etcd client dials as
// written: scheme://host:port (scheme http or https, in lower case, with at
// most "/" after the port) or host:port. The host is a name or IPv4
// address of letters, digits, '.', '-' and '_', or an IPv6 address in
// brackets (with a zone only in the host:port form, "[fe80::1%eth0]:2379");
// the port is 1 to 65535 in decimal, without a sign or leading zeros.
// Anything net/url would drop, decode or normalise (userinfo, a query or
// fragment, even empty; percent-escapes) is refused rather than read.
func checkEndpoint(ep string) error {
	hostport := ep
	if scheme, _, ok := strings.Cut(ep, "://"); ok {
		// The scheme as written, not as url.Parse reads it (lower-cased):
		// "HTTPS://h:1" would otherwise pass for https here while the
		// check for a TLS config looks for "https://".
		if scheme != "http" && scheme != "https" {
			return fmt.Errorf("scheme %q: want http or https, in lower case", scheme)
		}
		u, err := url.Parse(ep)
		if err != nil {
			return err
		}
		if u.Path != "" && u.Path != "/" {
			return fmt.Errorf("unexpected path %q", u.Path)
		}
		if u.User != nil || u.RawQuery != "" || u.ForceQuery || strings.Contains(ep, "#") { // "#" alone: an empty fragment, which url.URL does not keep
			return errors.New("want scheme://host:port, without user, query or fragment (credentials go in Config.Username and Config.Password)")
		}
		// What the client dials is u.Host, percent-decoded: accept only
		// when that is what was written.
		if strings.TrimSuffix(ep, "/") != scheme+"://"+u.Host {
			return fmt.Errorf("host %q is written %q: write it as it is dialed, without percent-escapes (an IPv6 zone: [addr%%zone]:port, without a scheme)", u.Host, strings.TrimPrefix(ep, scheme+"://"))
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
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
		return fmt.Errorf("port %q: want a number from 1 to 65535, without a sign or leading zeros", port)
	}
	return checkHost(host, strings.HasPrefix(hostport, "["))
}

// checkHost accepts a host name or IPv4 address of letters, digits, '.',
// '-' and '_', or, bracketed, an IPv6 address whose zone (if any) is of
// the same characters.
func checkHost(host string, bracketed bool) error {
	name := host
	if bracketed {
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() {
			return fmt.Errorf("host [%s]: want an IPv6 address in brackets", host)
		}
		if name = a.Zone(); name == "" {
			return nil
		}
	}
	for _, c := range name {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-' || c == '_') {
			return fmt.Errorf("host %q: want a name or IPv4 address of letters, digits, '.', '-' and '_', or an IPv6 address in brackets", host)
		}
	}
	return nil
}
