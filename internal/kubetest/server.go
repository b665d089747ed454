package kubetest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/tenure-dev/tenure/embedded"
	"github.com/tenure-dev/tenure/internal/etcdbin"
	"github.com/tenure-dev/tenure/internal/kubetest/apiserver"
	"github.com/tenure-dev/tenure/internal/require"
)

// Admin is the user whose token is in system:masters.
const Admin = apiserver.Admin

// An Option configures Start.
type Option func(*options)

type options struct {
	etcdBinary bool
	rbac       bool
	users      []string
}

// WithEtcdBinary stores the server's data in Debian's etcd binary
// (internal/etcdbin) instead of an etcd embedded in the test process.
func WithEtcdBinary() Option { return func(o *options) { o.etcdBinary = true } }

// WithRBAC authorizes requests with RBAC (--authorization-mode=RBAC)
// instead of allowing every request: users other than Admin may then do
// only what Roles bound to them allow.
func WithRBAC() Option { return func(o *options) { o.rbac = true } }

// WithUser gives user a bearer token of its own (see Server.Config), with
// no groups but system:authenticated.
func WithUser(user string) Option { return func(o *options) { o.users = append(o.users, user) } }

// Server is one kube-apiserver process (package apiserver) and the etcd it
// stores its data in, for one test.
type Server struct {
	// URL is the server's https:// address on 127.0.0.1, the same across
	// restarts.
	URL string
	// CAFile holds the certificate that verifies the server's.
	CAFile string

	srv *apiserver.Server
}

// Start starts an etcd and a kube-apiserver on it for t, and returns once
// the server answers /readyz. Both are stopped when t ends.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		require.KubeAPIServer.Missing(t, err)
		return nil
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	dir := t.TempDir()
	srv, err := apiserver.Start(context.Background(), apiserver.Config{
		Binary: bin, Dir: dir, EtcdServers: []string{startEtcd(t, o.etcdBinary, dir)},
		Users: o.users, RBAC: o.rbac,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Kill)
	return &Server{URL: srv.URL, CAFile: srv.CAFile, srv: srv}
}

// startEtcd starts the etcd the server stores its data in, stopped at
// cleanup, and returns its client URL.
func startEtcd(t testing.TB, binary bool, dir string) string {
	t.Helper()
	if binary {
		return etcdbin.Start(t)
	}
	url, stop, err := startEmbeddedEtcd(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return url
}

// startEmbeddedEtcd starts an etcd member in this process with its data
// under dir, and returns its client URL and the func that stops it. A
// port another listener took between FreeLocalURLs and the start is tried
// again on other ports, twice at most.
func startEmbeddedEtcd(dir string) (string, func(), error) {
	for try := 0; ; try++ {
		urls, err := embedded.FreeLocalURLs(2)
		if err != nil {
			return "", nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), apiserver.DefaultReadyWithin)
		e, err := embedded.Start(ctx, embedded.Config{Dir: filepath.Join(dir, fmt.Sprintf("etcd%d", try)), ClientURLs: urls[:1], PeerURLs: urls[1:]})
		cancel()
		if errors.Is(err, syscall.EADDRINUSE) && try < 2 {
			continue
		}
		if err != nil {
			return "", nil, err
		}
		return urls[0], func() { e.Close() }, nil
	}
}

// Restart starts kube-apiserver again, after Kill, on the same port and
// etcd, and waits until it answers /readyz.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if err := s.srv.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// Kill crashes kube-apiserver (SIGKILL, continuing it first if it was
// stopped) and waits for it to exit. It does nothing when it is not
// running. The etcd keeps running.
func (s *Server) Kill() { s.srv.Kill() }
