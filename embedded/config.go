package embedded

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/errs"
)

// Defaults used when a Config field is left empty.
const (
	DefaultName              = "tenure"
	DefaultClientURL         = "http://127.0.0.1:2379"
	DefaultPeerURL           = "http://127.0.0.1:2380"
	DefaultClusterToken      = "tenure"
	DefaultStartTimeout      = 30 * time.Second
	DefaultHeartbeatInterval = 100 * time.Millisecond
	DefaultElectionTimeout   = time.Second

	// A member that is its cluster's only member campaigns at once, but
	// raft still waits up to one election timeout, randomized, before it
	// does: these shorter defaults make it ready in a fraction of a second.
	// (A single voter can never lose its leadership, so the short timeout
	// costs nothing.)
	DefaultSingleHeartbeatInterval = 50 * time.Millisecond
	DefaultSingleElectionTimeout   = 250 * time.Millisecond
)

// Cluster states for Config.ClusterState.
const (
	// ClusterStateNew bootstraps a new cluster from Config.InitialCluster.
	ClusterStateNew = "new"
	// ClusterStateExisting joins a cluster that already exists (after the
	// member was added to it with etcd's MemberAdd).
	ClusterStateExisting = "existing"
)

// ErrInvalidConfig is wrapped by every error Config.Validate reports, to
// match with errors.Is. It wraps tenure.ErrInvalidConfig.
var ErrInvalidConfig = errs.Kind("embedded: invalid config", tenure.ErrInvalidConfig)

// Config configures one embedded etcd member. Only Dir is required; the
// zero value of every other field means the default documented on it.
//
// A member restarted on a data directory it has used before rejoins its
// cluster from the directory: Name, InitialCluster, ClusterState and
// ClusterToken are then ignored by etcd. Start takes one.
type Config struct {
	// Dir is the data directory. Required. Created if missing.
	Dir string

	// Name is the member's name, unique in its cluster. Default "tenure".
	Name string

	// ClientURLs are where the member listens for clients, http:// or
	// https:// with an IP address or "localhost" and a port. Port 0 picks a
	// free port; Server.Endpoints reports the real one. Default
	// http://127.0.0.1:2379.
	ClientURLs []string

	// AdvertiseClientURLs are the client URLs published to the cluster.
	// Default ClientURLs.
	AdvertiseClientURLs []string

	// PeerURLs are where the member listens for its peers. Peers must know
	// each other's addresses before they start, so use concrete ports
	// (FreeLocalURLs allocates some for tests). Default
	// http://127.0.0.1:2380.
	PeerURLs []string

	// AdvertisePeerURLs are the peer URLs published to the cluster and named
	// in InitialCluster. Default PeerURLs.
	AdvertisePeerURLs []string

	// InitialCluster lists every member of the cluster being bootstrapped
	// as "name=peerURL,name=peerURL,…". Default: this member alone,
	// Name=AdvertisePeerURLs.
	InitialCluster string

	// ClusterState is ClusterStateNew (default) or ClusterStateExisting.
	ClusterState string

	// ClusterToken distinguishes clusters bootstrapped with the same
	// InitialCluster. Default "tenure".
	ClusterToken string

	// ClientTLS secures the https:// client URLs. Required when a client
	// URL is https://.
	ClientTLS TLS

	// PeerTLS secures the https:// peer URLs. Required when a peer URL is
	// https://.
	PeerTLS TLS

	// HeartbeatInterval is etcd's raft heartbeat (tick). Default 100ms, or
	// 50ms when InitialCluster names this member alone.
	HeartbeatInterval time.Duration

	// ElectionTimeout is etcd's raft election timeout; at least five
	// heartbeats. Default 1s, or 250ms when InitialCluster names this
	// member alone (it is then ready at once). etcd's minimum lease TTL is
	// 1.5 election timeouts, rounded up to whole seconds: 2s with 1s, 1s
	// with 250ms.
	ElectionTimeout time.Duration

	// StartTimeout bounds how long Start waits for the member to be ready
	// (for a member of a new cluster, for a quorum of its peers to start).
	// Default 30s.
	StartTimeout time.Duration

	// Logger receives etcd's own log records at LogLevel and above. Nil
	// discards them.
	Logger *slog.Logger

	// LogLevel is the lowest level of etcd's records sent to Logger. Nil
	// means slog.LevelError: etcd is chatty at info level.
	LogLevel slog.Leveler
}

// TLS names the files that secure client or peer connections. Users set
// Config.ClientTLS and Config.PeerTLS with it.
type TLS struct {
	// CertFile and KeyFile are the member's certificate and private key,
	// PEM encoded.
	CertFile, KeyFile string
	// TrustedCAFile is the CA bundle (PEM) that client (or peer)
	// certificates are verified against.
	TrustedCAFile string
	// ClientCertAuth requires connecting clients (or peers) to present a
	// certificate signed by TrustedCAFile.
	ClientCertAuth bool
}

// Empty reports whether t names no files and requires nothing.
func (t TLS) Empty() bool { return t == TLS{} }

func (t TLS) info() transport.TLSInfo {
	return transport.TLSInfo{
		CertFile:       t.CertFile,
		KeyFile:        t.KeyFile,
		TrustedCAFile:  t.TrustedCAFile,
		ClientCertAuth: t.ClientCertAuth,
	}
}

// withDefaults returns c with every empty field set to its default.
func (c Config) withDefaults() Config {
	if c.Name == "" {
		c.Name = DefaultName
	}
	if len(c.ClientURLs) == 0 {
		c.ClientURLs = []string{DefaultClientURL}
	}
	if len(c.AdvertiseClientURLs) == 0 {
		c.AdvertiseClientURLs = c.ClientURLs
	}
	if len(c.PeerURLs) == 0 {
		c.PeerURLs = []string{DefaultPeerURL}
	}
	if len(c.AdvertisePeerURLs) == 0 {
		c.AdvertisePeerURLs = c.PeerURLs
	}
	if c.InitialCluster == "" {
		parts := make([]string, len(c.AdvertisePeerURLs))
		for i, u := range c.AdvertisePeerURLs {
			parts[i] = c.Name + "=" + u
		}
		c.InitialCluster = strings.Join(parts, ",")
	}
	if c.ClusterState == "" {
		c.ClusterState = ClusterStateNew
	}
	if c.ClusterToken == "" {
		c.ClusterToken = DefaultClusterToken
	}
	single := !strings.Contains(c.InitialCluster, ",")
	if c.HeartbeatInterval == 0 && c.ElectionTimeout == 0 && single {
		c.HeartbeatInterval, c.ElectionTimeout = DefaultSingleHeartbeatInterval, DefaultSingleElectionTimeout
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if c.ElectionTimeout == 0 {
		c.ElectionTimeout = DefaultElectionTimeout
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = DefaultStartTimeout
	}
	return c
}

// Validate reports every problem with c, each wrapping ErrInvalidConfig and
// naming the field, joined with errors.Join. Empty fields are checked as
// their defaults.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
	}
	if c.Dir == "" {
		bad("Config.Dir is empty: a data directory is required")
	}
	c.checkURLs(bad)
	if c.ClusterState != ClusterStateNew && c.ClusterState != ClusterStateExisting {
		bad("Config.ClusterState %q must be %q or %q", c.ClusterState, ClusterStateNew, ClusterStateExisting)
	}
	c.checkTLS(bad)
	switch {
	case c.HeartbeatInterval < time.Millisecond:
		bad("Config.HeartbeatInterval (%s) must be at least 1ms", c.HeartbeatInterval)
	case c.ElectionTimeout < 5*c.HeartbeatInterval:
		bad("Config.ElectionTimeout (%s) must be at least 5 × Config.HeartbeatInterval (%s)", c.ElectionTimeout, c.HeartbeatInterval)
	case c.ElectionTimeout > 50*time.Second:
		bad("Config.ElectionTimeout (%s) must be at most 50s", c.ElectionTimeout)
	}
	if c.StartTimeout < 0 {
		bad("Config.StartTimeout (%s) must not be negative", c.StartTimeout)
	}
	return errors.Join(errs...)
}

// checkURLs reports, through bad, every listen, advertise and initial-cluster
// URL that cannot be used.
func (c Config) checkURLs(bad func(format string, args ...any)) {
	check := func(field string, urls []string, listen bool, tls TLS, tlsField string) {
		for _, s := range urls {
			if _, err := parseURL(s, listen); err != nil {
				bad("Config.%s %q: %v", field, s, err)
				continue
			}
			if strings.HasPrefix(s, "https://") && (tls.CertFile == "" || tls.KeyFile == "") {
				bad("Config.%s %q is https but Config.%s.CertFile and KeyFile are not both set", field, s, tlsField)
			}
		}
	}
	check("ClientURLs", c.ClientURLs, true, c.ClientTLS, "ClientTLS")
	check("AdvertiseClientURLs", c.AdvertiseClientURLs, false, c.ClientTLS, "ClientTLS")
	check("PeerURLs", c.PeerURLs, true, c.PeerTLS, "PeerTLS")
	check("AdvertisePeerURLs", c.AdvertisePeerURLs, false, c.PeerTLS, "PeerTLS")
	for _, member := range strings.Split(c.InitialCluster, ",") {
		name, u, ok := strings.Cut(member, "=")
		if !ok || name == "" {
			bad("Config.InitialCluster %q: member %q is not name=peerURL", c.InitialCluster, member)
			continue
		}
		if _, err := parseURL(u, false); err != nil {
			bad("Config.InitialCluster %q: member %q: %v", c.InitialCluster, name, err)
		}
	}
}

// checkTLS reports, through bad, TLS settings that do not go together.
func (c Config) checkTLS(bad func(format string, args ...any)) {
	for _, t := range []struct {
		field string
		tls   TLS
	}{{"ClientTLS", c.ClientTLS}, {"PeerTLS", c.PeerTLS}} {
		if (t.tls.CertFile == "") != (t.tls.KeyFile == "") {
			bad("Config.%s: CertFile %q and KeyFile %q must be set together", t.field, t.tls.CertFile, t.tls.KeyFile)
		}
		if t.tls.ClientCertAuth && t.tls.TrustedCAFile == "" {
			bad("Config.%s.ClientCertAuth needs Config.%s.TrustedCAFile", t.field, t.field)
		}
	}
}

// parseURL parses an http:// or https:// URL with a host and a port (0 to
// 65535, in decimal), accepted only in the form the member uses it: the
// scheme in lower case, nothing after the port but "/", no percent-escapes.
// A URL to listen on must name an IP address or "localhost".
func parseURL(s string, listen bool) (*url.URL, error) {
	// The scheme as written, not as url.Parse reads it (lower-cased): the
	// checks for TLS files and for plain http beyond loopback look for
	// "https://" and "http://".
	if scheme, _, _ := strings.Cut(s, "://"); scheme != "http" && scheme != "https" {
		return nil, fmt.Errorf("scheme %q: want http or https, in lower case", scheme)
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, err
	}
	// url.URL does not keep an empty query or fragment ("?", "#"), and
	// u.Host is percent-decoded: what is used must be what was written.
	if u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.ForceQuery || u.User != nil ||
		strings.Contains(s, "#") || strings.TrimSuffix(s, "/") != u.Scheme+"://"+u.Host {
		return nil, errors.New("want scheme://host:port and nothing else, without percent-escapes")
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return nil, fmt.Errorf("want scheme://host:port: %w", err)
	}
	if port == "" {
		return nil, errors.New("no port")
	}
	if n, err := strconv.Atoi(port); err != nil || n > 65535 || strconv.Itoa(n) != port {
		return nil, fmt.Errorf("port %q: want a number from 0 to 65535, without leading zeros", port)
	}
	if listen && host != "localhost" && net.ParseIP(host) == nil {
		return nil, fmt.Errorf("host %q: can only listen on an IP address or localhost", host)
	}
	return u, nil
}

func parseURLs(ss []string) []url.URL {
	out := make([]url.URL, 0, len(ss))
	for _, s := range ss {
		u, _ := url.Parse(s) // validated
		out = append(out, *u)
	}
	return out
}
