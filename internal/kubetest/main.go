package kubetest

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/tenure-dev/tenure/internal/kubetest/apiserver"
	"github.com/tenure-dev/tenure/internal/require"
)

// Main starts one server for a test binary (an embedded etcd, AlwaysAllow,
// no users but Admin), hands it (or the reason there is none) to use, runs
// the tests, stops the server and returns m.Run's exit code, for TestMain.
// Tests that share it each work in a namespace of their own; a test that
// crashes its server, or needs RBAC or users, calls Start instead.
//
// The server is stopped before Main returns, so a goroutine-leak check run
// afterwards (leakcheck.VerifyTestMain with a TestingM whose Run calls Main)
// sees none of its goroutines.
func Main(m interface{ Run() int }, use func(*Server, error)) int {
	dir, err := os.MkdirTemp("", "kubetest-")
	if err != nil {
		use(nil, err)
		return m.Run()
	}
	defer os.RemoveAll(dir)
	s, stop, err := startShared(dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kubetest: no shared kube-apiserver: %v\n", err)
		use(nil, err)
		return m.Run()
	}
	use(s, nil)
	defer stop()
	return m.Run()
}

// Need returns s when there is a server. Otherwise it ends t as
// require.KubeAPIServer decides: a failure when kube-apiserver is required
// (TENURE_REQUIRE_KUBE_APISERVER, or CI=true), a skip with a notice
// otherwise.
func Need(t testing.TB, s *Server, err error) *Server {
	t.Helper()
	if s != nil && err == nil {
		return s
	}
	if err == nil {
		err = fmt.Errorf("no server was started (is kubetest.Main called from TestMain?)")
	}
	require.KubeAPIServer.Missing(t, err)
	return nil
}

// startShared starts an embedded etcd and a kube-apiserver on it, with
// their data under dir, and returns the server and the func that stops
// both.
func startShared(dir string) (*Server, func(), error) {
	bin, err := Binary()
	if err != nil {
		return nil, nil, err
	}
	url, stopEtcd, err := startEmbeddedEtcd(dir)
	if err != nil {
		return nil, nil, err
	}
	srv, err := apiserver.Start(context.Background(), apiserver.Config{Binary: bin, Dir: dir, EtcdServers: []string{url}})
	if err != nil {
		stopEtcd()
		return nil, nil, err
	}
	return &Server{URL: srv.URL, CAFile: srv.CAFile, srv: srv}, func() { srv.Kill(); stopEtcd() }, nil
}
