package kubetest

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/embedded"
	"github.com/tenure-dev/tenure/internal/etcdbin"
	"github.com/tenure-dev/tenure/internal/freeport"
	"github.com/tenure-dev/tenure/internal/require"
	"github.com/tenure-dev/tenure/internal/testpki"
)

// readyWithin bounds how long a start waits for /readyz: liveness with
// slack for a loaded 2-core machine (the server is ready in about 2s).
const readyWithin = 90 * time.Second

// Admin is the user whose token is in system:masters.
const Admin = "admin"

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

// Server is one kube-apiserver process and the etcd it stores its data in.
type Server struct {
	// URL is the server's https:// address on 127.0.0.1, the same across
	// restarts.
	URL string
	// CAFile holds the CA certificate that verifies the server.
	CAFile string

	bin     string
	args    []string
	logPath string
	tokens  map[string]string // user → bearer token
	tls     *tls.Config

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
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
	pki := testpki.New(t)
	s := &Server{bin: bin, CAFile: pki.CAFile, logPath: filepath.Join(dir, "kube-apiserver.log"),
		tokens: map[string]string{}, tls: &tls.Config{RootCAs: pki.Pool, MinVersion: tls.VersionTLS12}}
	tokenFile, err := s.writeTokens(dir, append([]string{Admin}, o.users...))
	if err != nil {
		t.Fatal(err)
	}
	saKey, saPub, err := writeServiceAccountKeys(dir)
	if err != nil {
		t.Fatal(err)
	}
	ports, err := freeport.Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	s.URL = fmt.Sprintf("https://127.0.0.1:%d", ports[0])
	authz := "AlwaysAllow"
	if o.rbac {
		authz = "RBAC"
	}
	s.args = []string{
		"--etcd-servers", startEtcd(t, o.etcdBinary, dir),
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
		"--secure-port", fmt.Sprint(ports[0]),
		"--tls-cert-file", pki.ServerCertFile, "--tls-private-key-file", pki.ServerKeyFile,
		"--cert-dir", filepath.Join(dir, "certs"),
		"--token-auth-file", tokenFile,
		"--authorization-mode", authz,
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file", saPub, "--service-account-signing-key-file", saKey,
		"--endpoint-reconciler-type", "none",
		"--service-cluster-ip-range", "10.0.0.0/24",
	}
	t.Cleanup(s.Kill)
	s.Restart(t)
	return s
}

// startEtcd starts the etcd the server stores its data in, stopped at
// cleanup, and returns its client URL.
func startEtcd(t testing.TB, binary bool, dir string) string {
	t.Helper()
	if binary {
		return etcdbin.Start(t)
	}
	urls, err := embedded.FreeLocalURLs(2)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), readyWithin)
	defer cancel()
	e, err := embedded.Start(ctx, embedded.Config{Dir: filepath.Join(dir, "etcd"), ClientURLs: urls[:1], PeerURLs: urls[1:]})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return urls[0]
}

// writeTokens draws a bearer token for each user and writes the static
// token file, "token,user,uid[,groups]" a line.
func (s *Server) writeTokens(dir string, users []string) (string, error) {
	var b strings.Builder
	for _, u := range users {
		tok := make([]byte, 16)
		_, _ = rand.Read(tok)
		s.tokens[u] = hex.EncodeToString(tok)
		line := fmt.Sprintf("%s,%s,%s", s.tokens[u], u, u)
		if u == Admin {
			line += `,"system:masters"`
		}
		b.WriteString(line + "\n")
	}
	p := filepath.Join(dir, "tokens.csv")
	return p, os.WriteFile(p, []byte(b.String()), 0o600)
}

// Restart starts kube-apiserver (again, after Kill) on the same port and
// etcd, and waits until it answers /readyz.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(s.bin, s.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", s.bin, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()

	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: s.tls}}
	defer client.CloseIdleConnections()
	for began := time.Now(); time.Since(began) < readyWithin; time.Sleep(50 * time.Millisecond) {
		if s.ready(client) {
			return
		}
		select {
		case <-exited:
			t.Fatalf("%s exited while starting: %s\n%s", s.bin, cmd.ProcessState, s.tail())
		default:
		}
	}
	t.Fatalf("%s not ready within %s:\n%s", s.bin, readyWithin, s.tail())
}

// ready reports whether the server answers /readyz with 200.
func (s *Server) ready(client *http.Client) bool {
	req, err := http.NewRequest(http.MethodGet, s.URL+"/readyz", nil)
	if err != nil {
		return false
	}
	req.Header.Set("Authorization", "Bearer "+s.tokens[Admin])
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Kill crashes kube-apiserver (SIGKILL, continuing it first if it was
// stopped) and waits for it to exit. It does nothing when it is not
// running. The etcd keeps running.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGCONT)
	cmd.Process.Kill()
	<-exited
}

// tail returns the last lines kube-apiserver logged.
func (s *Server) tail() string {
	b, _ := os.ReadFile(s.logPath)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return "last lines of kube-apiserver's log:\n" + strings.Join(lines, "\n")
}
