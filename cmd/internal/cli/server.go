package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tenure-dev/tenure/embedded"
)

// DefaultHTTPAddr is where tenure server serves its status page and metrics.
const DefaultHTTPAddr = "127.0.0.1:9479"

type serverFlags struct {
	dataDir         string
	name            string
	listenClient    []string
	listenPeer      []string
	advertiseClient []string
	advertisePeer   []string
	initialCluster  string
	clusterState    string
	clusterToken    string
	serverTLSCert   string
	serverTLSKey    string
	serverTLSCA     string
	peerTLSCert     string
	peerTLSKey      string
	peerTLSCA       string
	insecureListen  bool
	http            string
	httpConfig      string
	prefix          string
	startTimeout    time.Duration
	heartbeat       time.Duration
	electionTimeout time.Duration
}

// serverLong is the help of tenure server.
const serverLong = `server runs an etcd member inside the tenure process: the coordinator that
"tenure run", "status" and "watch" talk to (their default --endpoints,
http://127.0.0.1:2379, is this command's default --listen-client).

Alone, it is a one-member cluster whose data lives in --data-dir; it is
ready in well under a second. Started again on the same --data-dir it
resumes with its data (fencing tokens keep increasing across restarts).

Several servers started with the same --initial-cluster form one etcd
cluster that keeps working while a majority of its members runs: start
each with its own --name, --data-dir, --listen-client, --listen-peer and
--http, and the full member list in --initial-cluster. A member that has
lost its majority refuses to serve rather than serve stale data.

Client and peer URLs on an address other than loopback (0.0.0.0, a
network interface's address) must be https:// with client certificates
required (--server-tls-ca, --peer-tls-ca): whoever reaches a plain URL can
take every key. --insecure-listen serves them without, when you decide
the network is trusted.

Also served, on --http:
  /         a live status page: every key under --prefix with its holder,
            token and lease left counting down, and the recent transitions
            with their reasons; it updates by itself and needs no internet
  /status   the same as JSON (durations in *_ms fields)
  /health   200 "ok" while the member can serve a linearizable read, 503
            with the reason otherwise (/healthz answers the same)
  /leader   200 while this member leads the etcd cluster, 503 otherwise
  /metrics  Prometheus: the etcd member's metrics (etcd_server_has_leader,
            …), the process's, and tenure_leader_info and
            tenure_leaderless_seconds for the keys it shows; the metrics of
            each contender come from "tenure run --http"

Once ready it prints one line on stdout:

  tenure server ready: name=tenure clients=http://127.0.0.1:2379 http=127.0.0.1:9479 data=tenure-data

SIGINT or SIGTERM stops it cleanly.`

func newServerCommand(g *globalFlags) *cobra.Command {
	var f serverFlags
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run an etcd member to coordinate tenure (single member or a cluster)",
		Long:  serverLong,
		Example: `  # one member, data in ./tenure-data
  tenure server

  # a three-member cluster on one machine (one line per terminal)
  tenure server --name m1 --data-dir m1 --listen-client http://127.0.0.1:2379 --listen-peer http://127.0.0.1:2380 --http 127.0.0.1:9479 \
    --initial-cluster m1=http://127.0.0.1:2380,m2=http://127.0.0.1:2382,m3=http://127.0.0.1:2384
  tenure server --name m2 --data-dir m2 --listen-client http://127.0.0.1:2381 --listen-peer http://127.0.0.1:2382 --http 127.0.0.1:9480 \
    --initial-cluster m1=http://127.0.0.1:2380,m2=http://127.0.0.1:2382,m3=http://127.0.0.1:2384
  tenure server --name m3 --data-dir m3 --listen-client http://127.0.0.1:2383 --listen-peer http://127.0.0.1:2384 --http 127.0.0.1:9481 \
    --initial-cluster m1=http://127.0.0.1:2380,m2=http://127.0.0.1:2382,m3=http://127.0.0.1:2384
  tenure status --endpoints http://127.0.0.1:2379,http://127.0.0.1:2381,http://127.0.0.1:2383 --prefix ""

  # clients over TLS, with client certificates required
  tenure server --listen-client https://127.0.0.1:2379 \
    --server-tls-cert server.pem --server-tls-key server-key.pem --server-tls-ca ca.pem`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runServer(cmd, g, &f)
		},
	}
	f.register(cmd.Flags())
	return cmd
}

// register binds f to the flags of tenure server.
func (f *serverFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.dataDir, "data-dir", "tenure-data", "directory of the member's data (created if missing)")
	fs.StringVar(&f.name, "name", embedded.DefaultName, "member name, unique in its cluster")
	fs.StringSliceVar(&f.listenClient, "listen-client", []string{embedded.DefaultClientURL}, "client URLs to listen on (http:// or https://, IP address or localhost; port 0 picks one)")
	fs.StringSliceVar(&f.listenPeer, "listen-peer", []string{embedded.DefaultPeerURL}, "peer URLs to listen on, for the other members")
	fs.StringSliceVar(&f.advertiseClient, "advertise-client", nil, "client URLs published to the cluster (default --listen-client)")
	fs.StringSliceVar(&f.advertisePeer, "advertise-peer", nil, "peer URLs published to the cluster and named in --initial-cluster (default --listen-peer)")
	fs.StringVar(&f.initialCluster, "initial-cluster", "", `every member of a new cluster, "name=peerURL,name=peerURL,…" (default: this member alone)`)
	fs.StringVar(&f.clusterState, "initial-cluster-state", embedded.ClusterStateNew, `"new" to bootstrap a cluster, "existing" to join one (after etcd's member add)`)
	fs.StringVar(&f.clusterToken, "initial-cluster-token", embedded.DefaultClusterToken, "distinguishes clusters bootstrapped with the same --initial-cluster")
	fs.StringVar(&f.serverTLSCert, "server-tls-cert", "", "PEM certificate served on https:// client URLs")
	fs.StringVar(&f.serverTLSKey, "server-tls-key", "", "PEM private key of --server-tls-cert")
	fs.StringVar(&f.serverTLSCA, "server-tls-ca", "", "PEM CA bundle: when set, clients must present a certificate it signed")
	fs.StringVar(&f.peerTLSCert, "peer-tls-cert", "", "PEM certificate for https:// peer URLs")
	fs.StringVar(&f.peerTLSKey, "peer-tls-key", "", "PEM private key of --peer-tls-cert")
	fs.StringVar(&f.peerTLSCA, "peer-tls-ca", "", "PEM CA bundle: when set, peers must present a certificate it signed")
	fs.BoolVar(&f.insecureListen, "insecure-listen", false, "serve client or peer URLs on an address other than loopback without TLS and client certificates: anyone who reaches them can take every key")
	fs.StringVar(&f.http, "http", DefaultHTTPAddr, `host:port of the live status page (/) and of /status, /health, /leader and /metrics, plain HTTP unless --http-config (warned about beyond loopback); "" disables it`)
	registerHTTPConfig(fs, &f.httpConfig)
	fs.StringVar(&f.prefix, "prefix", "", `the status page shows every key under this prefix ("" for all)`)
	fs.DurationVar(&f.startTimeout, "start-timeout", embedded.DefaultStartTimeout, "give up when the member is not ready after this long (a new cluster waits for a majority of its members)")
	fs.DurationVar(&f.heartbeat, "heartbeat-interval", 0, "raft heartbeat (default 100ms, 50ms for a single member)")
	fs.DurationVar(&f.electionTimeout, "election-timeout", 0, "raft election timeout, at least 5 heartbeats (default 1s, 250ms for a single member); etcd's shortest lease is 1.5 election timeouts rounded up to whole seconds")
}

func (f *serverFlags) config(log *slog.Logger, level slog.Level) embedded.Config {
	etcdLevel := slog.LevelError // etcd is chatty below
	if level <= slog.LevelDebug {
		etcdLevel = slog.LevelInfo
	}
	return embedded.Config{
		Dir:                 f.dataDir,
		Name:                f.name,
		ClientURLs:          f.listenClient,
		AdvertiseClientURLs: f.advertiseClient,
		PeerURLs:            f.listenPeer,
		AdvertisePeerURLs:   f.advertisePeer,
		InitialCluster:      f.initialCluster,
		ClusterState:        f.clusterState,
		ClusterToken:        f.clusterToken,
		ClientTLS:           embedded.TLS{CertFile: f.serverTLSCert, KeyFile: f.serverTLSKey, TrustedCAFile: f.serverTLSCA, ClientCertAuth: f.serverTLSCA != ""},
		PeerTLS:             embedded.TLS{CertFile: f.peerTLSCert, KeyFile: f.peerTLSKey, TrustedCAFile: f.peerTLSCA, ClientCertAuth: f.peerTLSCA != ""},
		HeartbeatInterval:   f.heartbeat,
		ElectionTimeout:     f.electionTimeout,
		StartTimeout:        f.startTimeout,
		Logger:              log,
		LogLevel:            etcdLevel,
	}
}

func runServer(cmd *cobra.Command, g *globalFlags, f *serverFlags) error {
	ctx := cmd.Context()
	log, err := g.logger(cmd.ErrOrStderr(), false)
	if err != nil {
		return err
	}
	level, _ := g.level() // checked by logger
	cfg := f.config(log, level)
	if err := f.check(cmd, cfg); err != nil {
		return err
	}

	// Listen for HTTP first: a port already in use is found before the
	// member starts.
	var ln net.Listener
	if f.http != "" {
		if ln, err = net.Listen("tcp", f.http); err != nil {
			return fmt.Errorf("--http %s: %w", f.http, err)
		}
		defer ln.Close()
	}

	if err := checkPortsFree(cmd, f); err != nil {
		return err
	}
	srv, err := startMember(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return &exitError{code: ExitOK}
		}
		return err
	}
	defer func() {
		began := time.Now()
		srv.Close()
		log.Info("member stopped", "name", srv.Name(), "took", time.Since(began).Round(time.Millisecond))
	}()

	httpAddr := "off"
	var httpDone <-chan error
	var stopHTTP func()
	if ln != nil {
		if stopHTTP, httpDone, err = serveServerMonitor(ln, f.httpConfig, srv, f.prefix, log); err != nil {
			return err
		}
		httpAddr = ln.Addr().String()
		warnPlainHTTP(log, httpAddr, f.httpConfig)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "tenure server ready: name=%s clients=%s http=%s data=%s\n",
		srv.Name(), strings.Join(srv.Endpoints(), ","), httpAddr, srv.Dir())
	log.Info("member ready", "name", srv.Name(), "clients", strings.Join(srv.Endpoints(), ","), "http", httpAddr, "data", srv.Dir())

	runErr := awaitEnd(ctx, srv, httpDone, httpAddr, log)
	if stopHTTP != nil {
		stopHTTP()
	}
	return runErr
}

// check checks the server's flags and the member's configuration they
// make, before anything is started.
func (f *serverFlags) check(cmd *cobra.Command, cfg embedded.Config) error {
	if err := cfg.Validate(); err != nil {
		return &exitError{code: ExitUsage, err: flagNames(err)}
	}
	if err := checkListenSecure(f); err != nil {
		return &exitError{code: ExitUsage, err: err}
	}
	return checkHTTPFlags(cmd, f.http, f.httpConfig)
}

// startMember starts the member cfg describes. When the start fails, the
// data directory is removed if this start created it: a failed start leaves
// nothing behind.
func startMember(ctx context.Context, cfg embedded.Config) (*embedded.Server, error) {
	_, statErr := os.Stat(cfg.Dir)
	newDir := errors.Is(statErr, fs.ErrNotExist)
	srv, err := embedded.Start(ctx, cfg)
	if err != nil && newDir {
		_ = os.RemoveAll(cfg.Dir)
	}
	return srv, err
}

// awaitEnd waits until ctx ends (nil), the member fails, or its --http
// server at httpAddr does (the error).
func awaitEnd(ctx context.Context, srv *embedded.Server, httpDone <-chan error, httpAddr string, log *slog.Logger) error {
	select {
	case <-ctx.Done():
		log.Info("stopping", "name", srv.Name())
	case err, ok := <-srv.Err():
		if ok {
			return fmt.Errorf("member %q failed: %w", srv.Name(), err)
		}
	case err := <-httpDone:
		return fmt.Errorf("--http %s: %w", httpAddr, err)
	}
	return nil
}

// checkListenSecure refuses a --listen-client or --listen-peer URL on an
// address other than loopback unless it is https:// with client
// certificates required (--server-tls-ca, --peer-tls-ca), or
// --insecure-listen says to: whoever reaches a plain client URL can take
// every key, and a plain peer URL lets anyone join the cluster's log.
func checkListenSecure(f *serverFlags) error {
	if f.insecureListen {
		return nil
	}
	for _, fl := range []struct {
		name, tls string
		urls      []string
		ca        string
	}{
		{"--listen-client", "--server-tls-cert, --server-tls-key and --server-tls-ca", f.listenClient, f.serverTLSCA},
		{"--listen-peer", "--peer-tls-cert, --peer-tls-key and --peer-tls-ca", f.listenPeer, f.peerTLSCA},
	} {
		for _, raw := range fl.urls {
			u, err := url.Parse(raw)
			if err != nil || loopbackHost(u.Hostname()) || (u.Scheme == "https" && fl.ca != "") {
				continue // Validate has said what is wrong, or it is safe
			}
			return fmt.Errorf("%s %s serves the coordinator beyond this machine without TLS and client certificates: "+
				"anyone who reaches it can take every key; use https:// with %s, or a loopback address (127.0.0.1), "+
				"or pass --insecure-listen to serve it anyway (on a network only trusted machines reach)", fl.name, raw, fl.tls)
		}
	}
	return nil
}

// loopbackHost reports whether host, from a listen URL, is this machine
// alone: localhost or a loopback IP address (0.0.0.0 and :: are every
// address, not loopback).
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkPortsFree tries to listen on every --listen-client and --listen-peer
// address, so that a port in use is reported with the flag that named it
// before the member starts (and creates its data directory).
func checkPortsFree(cmd *cobra.Command, f *serverFlags) error {
	for _, fl := range []struct {
		name string
		urls []string
	}{{"listen-client", f.listenClient}, {"listen-peer", f.listenPeer}} {
		for _, raw := range fl.urls {
			u, err := url.Parse(raw)
			if err != nil || u.Port() == "" || u.Port() == "0" {
				continue // Validate has said what is wrong, or any port will do
			}
			ln, err := net.Listen("tcp", u.Host)
			if err != nil {
				return fmt.Errorf("%s %s: %w (is another tenure server or etcd running there? pick a free port)", flagRef(cmd, fl.name), raw, err)
			}
			ln.Close()
		}
	}
	return nil
}

// memberHealth reports nil when srv can serve a linearizable read now: it
// is ready, knows a raft leader, and the leader confirms its read index.
func memberHealth(ctx context.Context, srv *embedded.Server) error {
	es := srv.Etcd().Server
	select {
	case <-es.ReadyNotify():
	default:
		return errors.New("member not ready")
	}
	if es.Leader() == 0 {
		return errors.New("no raft leader: the member has lost its cluster's majority")
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := es.LinearizableReadNotify(ctx); err != nil {
		return fmt.Errorf("linearizable read: %w", err)
	}
	if alarms := es.Alarms(); len(alarms) > 0 {
		return fmt.Errorf("alarm raised: %s", alarms[0].Alarm)
	}
	return nil
}

// flagNames rewrites the embedded package's field names in err as the
// flags that set them.
func flagNames(err error) error {
	r := strings.NewReplacer(
		"Config.Dir", "--data-dir",
		"Config.AdvertiseClientURLs", "--advertise-client",
		"Config.AdvertisePeerURLs", "--advertise-peer",
		"Config.ClientURLs", "--listen-client",
		"Config.PeerURLs", "--listen-peer",
		"Config.InitialCluster", "--initial-cluster",
		"Config.ClusterState", "--initial-cluster-state",
		"Config.ClientTLS.CertFile and KeyFile", "--server-tls-cert and --server-tls-key",
		"Config.PeerTLS.CertFile and KeyFile", "--peer-tls-cert and --peer-tls-key",
		"Config.ClientTLS", "--server-tls-*",
		"Config.PeerTLS", "--peer-tls-*",
		"Config.HeartbeatInterval", "--heartbeat-interval",
		"Config.ElectionTimeout", "--election-timeout",
		"Config.StartTimeout", "--start-timeout",
	)
	return errors.New(r.Replace(err.Error()))
}
