package embedded

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tenure-dev/tenure/internal/zapslog"
)

// Server is one running etcd member, as Start returns it. Its methods are
// safe for concurrent use.
type Server struct {
	etcd      *embed.Etcd
	cfg       Config
	endpoints []string

	mu   sync.Mutex
	grpc []*grpc.Server // the member's client-facing gRPC servers

	closing atomic.Bool // Close has begun
	errc    chan error  // failures while running, forwarded from etcd
	errDone chan struct{}

	lock *os.File // the data dir's lock file, held until Close

	closeOnce sync.Once
}

// Start starts an etcd member as cfg describes and waits until it is ready
// to serve clients: for a member of a new multi-member cluster, until a
// quorum of its peers has started too. It gives up, stops the member and
// returns an error when ctx ends, when cfg.StartTimeout passes, or when etcd
// reports a failure first.
//
// The caller must Close the returned Server.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("embedded: member %q: data directory: %w", cfg.Name, err)
	}

	lock, err := lockDir(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("embedded: member %q: %w", cfg.Name, err)
	}
	s := &Server{cfg: cfg, lock: lock, errc: make(chan error, 1), errDone: make(chan struct{})}
	e, err := embed.StartEtcd(s.etcdConfig())
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("embedded: start member %q (data %s): %w", cfg.Name, cfg.Dir, err)
	}
	s.etcd = e
	s.endpoints = endpoints(cfg.ClientURLs, e.Clients)
	go s.forwardErrors()

	timer := time.NewTimer(cfg.StartTimeout)
	defer timer.Stop()
	select {
	case <-e.Server.ReadyNotify():
		return s, nil
	case err = <-s.errc:
		err = fmt.Errorf("embedded: member %q failed while starting: %w", cfg.Name, err)
	case <-e.Server.StopNotify():
		err = fmt.Errorf("embedded: member %q stopped while starting", cfg.Name)
	case <-ctx.Done():
		err = fmt.Errorf("embedded: start member %q: %w", cfg.Name, context.Cause(ctx))
	case <-timer.C:
		err = fmt.Errorf("embedded: member %q not ready within Config.StartTimeout (%s); initial cluster %s", cfg.Name, cfg.StartTimeout, cfg.InitialCluster)
	}
	s.Close()
	return nil, err
}

// etcdConfig is the etcd configuration of s's member.
func (s *Server) etcdConfig() *embed.Config {
	ec := embed.NewConfig()
	ec.Name = s.cfg.Name
	ec.Dir = s.cfg.Dir
	ec.ListenClientUrls = parseURLs(s.cfg.ClientURLs)
	ec.AdvertiseClientUrls = parseURLs(s.cfg.AdvertiseClientURLs)
	ec.ListenPeerUrls = parseURLs(s.cfg.PeerURLs)
	ec.AdvertisePeerUrls = parseURLs(s.cfg.AdvertisePeerURLs)
	ec.InitialCluster = s.cfg.InitialCluster
	ec.ClusterState = s.cfg.ClusterState
	ec.InitialClusterToken = s.cfg.ClusterToken
	ec.ClientTLSInfo = s.cfg.ClientTLS.info()
	ec.PeerTLSInfo = s.cfg.PeerTLS.info()
	ec.TickMs = uint(s.cfg.HeartbeatInterval / time.Millisecond)
	ec.ElectionMs = uint(s.cfg.ElectionTimeout / time.Millisecond)
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zapslog.New(s.cfg.Logger, s.cfg.LogLevel).
		WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core { return &shutdownFilter{c, &s.closing} })))
	// tenure speaks gRPC only; the JSON gateway would add an in-process
	// client connection per listener and nothing tenure uses.
	ec.EnableGRPCGateway = false
	// Keep a handle on every client-facing gRPC server, so that Close can
	// end open streams (watches, keepalives) at once instead of waiting
	// etcd's request timeout for them to finish.
	ec.ServiceRegister = s.register
	// Once Close has begun, refuse new streams. Close stops the gRPC
	// servers, which ends every open stream; a client then opens its
	// watch again, and over TLS (gRPC served by etcd's HTTP server) a
	// stream that arrives while Stop waits for the others is never closed
	// by it, so that Stop would wait for it forever. Refused, the stream
	// ends at once.
	ec.GRPCAdditionalServerOptions = []grpc.ServerOption{grpc.ChainStreamInterceptor(s.refuseWhileClosing)}
	return ec
}

// refuseWhileClosing is a gRPC stream interceptor that refuses every
// stream once Close has begun.
func (s *Server) refuseWhileClosing(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if s.closing.Load() {
		return status.Error(codes.Unavailable, "etcd member is closing")
	}
	return handler(srv, ss)
}

func (s *Server) register(g *grpc.Server) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.grpc = append(s.grpc, g)
	if s.closing.Load() {
		g.Stop() // Serve will return at once
	}
}

// forwardErrors passes etcd's failures on to Err, except those that Close
// itself causes; it ends when etcd closes its error channel, at the end of
// Close.
func (s *Server) forwardErrors() {
	defer close(s.errDone)
	defer close(s.errc)
	for err := range s.etcd.Err() {
		if err == nil || s.closing.Load() {
			continue
		}
		select {
		case s.errc <- err:
		default: // one failure is enough to report
		}
	}
}

// storageVersionFailed is the message of etcd's storage version monitor
// when an update fails.
const storageVersionFailed = "failed to update storage version"

// shutdownFilter quiets etcd's logging once Close has begun: stopping its
// servers makes etcd log errors that are side effects of the shutdown
// ("setting up serving from embedded etcd failed": "http: Server closed",
// "use of closed network connection"; a storage version update cut short).
// The first kind is dropped; any other error is logged as a warning. It
// also makes a failed storage version update a warning at any time (see
// Check).
type shutdownFilter struct {
	zapcore.Core
	closing *atomic.Bool
}

func (f *shutdownFilter) With(fs []zapcore.Field) zapcore.Core {
	return &shutdownFilter{f.Core.With(fs), f.closing}
}

func (f *shutdownFilter) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if e.Level == zapcore.ErrorLevel && e.Message == storageVersionFailed {
		// etcd's storage version monitor runs as soon as the member is
		// ready and logs this error when no raft term has been stored
		// yet ("missing term information"), then retries: a race at
		// start, not a fault, so it is a warning (not shown by default).
		e.Level = zapcore.WarnLevel
	}
	if f.closing.Load() && e.Level == zapcore.ErrorLevel {
		if e.Message == "setting up serving from embedded etcd failed." {
			return ce
		}
		e.Level = zapcore.WarnLevel
	}
	return f.Core.Check(e, ce)
}

// endpoints returns the client URLs the member actually listens on: the
// configured ones, with port 0 replaced by the port the system picked.
func endpoints(configured []string, ls []net.Listener) []string {
	scheme := make(map[string]string) // host:port → scheme
	for _, s := range configured {
		u := parseURLs([]string{s})[0]
		scheme[u.Host] = u.Scheme
		if h, p, _ := net.SplitHostPort(u.Host); p == "0" {
			scheme[h+":0"] = u.Scheme
		}
	}
	out := make([]string, 0, len(ls))
	for _, l := range ls {
		addr := l.Addr().String()
		sc, ok := scheme[addr]
		if !ok {
			h, _, _ := net.SplitHostPort(addr)
			if sc, ok = scheme[h+":0"]; !ok {
				sc = "http"
			}
		}
		out = append(out, sc+"://"+addr)
	}
	return out
}

// Endpoints returns the client URLs the member listens on, with the ports
// actually bound, ready for an etcd client's Endpoints.
func (s *Server) Endpoints() []string {
	return append([]string(nil), s.endpoints...)
}

// Name returns the member's name.
func (s *Server) Name() string { return s.cfg.Name }

// Dir returns the member's data directory.
func (s *Server) Dir() string { return s.cfg.Dir }

// Config returns the configuration the member was started with, defaults
// filled in. Starting a Server from it on the same data directory restarts
// the member.
func (s *Server) Config() Config { return s.cfg }

// IsLeader reports whether the member is the raft leader of its cluster.
func (s *Server) IsLeader() bool {
	return s.etcd.Server.Leader() == s.etcd.Server.MemberID()
}

// Err reports a failure of the member while it runs (a listener that
// stopped serving, for instance); the member should then be closed. Errors
// caused by Close itself are not reported. The channel is closed by Close.
func (s *Server) Err() <-chan error { return s.errc }

// Etcd returns the underlying etcd member, for uses this package does not
// cover. Do not Close it directly: use Server.Close.
func (s *Server) Etcd() *embed.Etcd { return s.etcd }

// Close stops the member: it ends every client connection first (open
// watches and keepalive streams fail at once instead of delaying the
// shutdown), hands raft leadership to a peer if it leads a multi-member
// cluster, and waits for etcd's goroutines to end. Close is idempotent and
// always returns nil; its error result is there to satisfy io.Closer.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closing.Store(true)
		gs := s.grpc
		s.mu.Unlock()
		for _, g := range gs {
			g.Stop()
		}
		select {
		case <-s.etcd.Server.ReadyNotify():
		default:
			// Never ready: etcd's Close would wait forever for client
			// servers that only start once the member is ready. Stopping
			// the member first lets them give up.
			s.etcd.Server.Stop()
		}
		s.etcd.Close()
		<-s.errDone
		s.lock.Close() // releases the flock
	})
	return nil
}

// String describes the member for logs.
func (s *Server) String() string {
	return fmt.Sprintf("etcd member %q at %s (data %s)", s.cfg.Name, strings.Join(s.endpoints, ","), s.cfg.Dir)
}
