// Package apiserver runs a real kube-apiserver process on 127.0.0.1, on an
// etcd it is given: started, crashed (SIGKILL) and restarted on the same
// port, with the same data, certificates and tokens. tenure's tests start
// one through internal/kubetest; "tenure verify --kube-apiserver" starts
// one for its run and restarts it as a fault (package chaos).
//
// The server authenticates with static bearer tokens (--token-auth-file):
// Admin is in system:masters, and every other user of Config.Users has a
// token of its own and no groups but system:authenticated. It authorizes
// with AlwaysAllow, or with RBAC (Config.RBAC). It serves TLS with the
// self-signed certificate it makes in its --cert-dir on first start (for
// the IP address 127.0.0.1; CAFile verifies it), signs service-account
// tokens with a key pair made here, and reconciles no endpoints
// (--endpoint-reconciler-type=none), so it runs without a kubelet or any
// other component. It is ready in about two seconds and uses about 300 MB.
package apiserver

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/tenure-dev/tenure/internal/freeport"
	"github.com/tenure-dev/tenure/internal/proc"
)

// Admin is the user whose token is in system:masters.
const Admin = "admin"

// DefaultReadyWithin is Config.ReadyWithin's default: liveness with slack
// for a loaded 2-core machine (the server is ready in about 2s).
const DefaultReadyWithin = 90 * time.Second

// Config says how to run a kube-apiserver.
type Config struct {
	// Binary is the kube-apiserver executable. Required.
	Binary string
	// Dir holds the server's files: its token file, service-account keys,
	// certificates and log. Required; it must exist.
	Dir string
	// EtcdServers are the client URLs of the etcd that stores the
	// server's data. Required.
	EtcdServers []string
	// Users get a bearer token each, besides Admin.
	Users []string
	// RBAC authorizes with RBAC (--authorization-mode=RBAC) instead of
	// allowing every request: users other than Admin may then do only
	// what Roles bound to them allow.
	RBAC bool
	// ReadyWithin bounds how long Start and Restart wait for /readyz; 0
	// means DefaultReadyWithin.
	ReadyWithin time.Duration
}

// Server is one kube-apiserver process.
type Server struct {
	// URL is the server's https:// address on 127.0.0.1, the same across
	// restarts.
	URL string
	// CAFile holds the certificate that verifies the server's (written by
	// the server at its first start).
	CAFile string

	cfg     Config
	args    []string
	logPath string
	tokens  map[string]string // user → bearer token

	proc proc.Slot // the running kube-apiserver
}

// Start starts kube-apiserver as cfg says, on a free loopback port, and
// returns once it answers /readyz. Kill stops it. ctx bounds the wait.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Binary == "" || cfg.Dir == "" || len(cfg.EtcdServers) == 0 {
		return nil, errors.New("apiserver: Config.Binary, Config.Dir and Config.EtcdServers are required")
	}
	if cfg.ReadyWithin <= 0 {
		cfg.ReadyWithin = DefaultReadyWithin
	}
	certDir := filepath.Join(cfg.Dir, "certs")
	s := &Server{cfg: cfg, CAFile: filepath.Join(certDir, "apiserver.crt"),
		logPath: filepath.Join(cfg.Dir, "kube-apiserver.log"), tokens: map[string]string{}}
	tokenFile, err := s.writeTokens(append([]string{Admin}, cfg.Users...))
	if err != nil {
		return nil, err
	}
	saKey, saPub, err := writeServiceAccountKeys(cfg.Dir)
	if err != nil {
		return nil, err
	}
	ports, err := freeport.Ports(1)
	if err != nil {
		return nil, err
	}
	s.URL = fmt.Sprintf("https://127.0.0.1:%d", ports[0])
	authz := "AlwaysAllow"
	if cfg.RBAC {
		authz = "RBAC"
	}
	s.args = []string{
		"--etcd-servers", strings.Join(cfg.EtcdServers, ","),
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
		"--secure-port", fmt.Sprint(ports[0]),
		"--cert-dir", certDir,
		"--token-auth-file", tokenFile,
		"--authorization-mode", authz,
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file", saPub, "--service-account-signing-key-file", saKey,
		"--endpoint-reconciler-type", "none",
		"--service-cluster-ip-range", "10.0.0.0/24",
	}
	if err := s.Restart(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Token returns the bearer token of user (Admin, or one of Config.Users).
func (s *Server) Token(user string) (string, bool) {
	tok, ok := s.tokens[user]
	return tok, ok
}

// writeTokens draws a bearer token for each user and writes the static
// token file, "token,user,uid[,groups]" a line.
func (s *Server) writeTokens(users []string) (string, error) {
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
	p := filepath.Join(s.cfg.Dir, "tokens.csv")
	return p, os.WriteFile(p, []byte(b.String()), 0o600)
}

// Restart starts kube-apiserver (again, after Kill) on the same port,
// etcd, certificates and tokens, and waits until it answers /readyz. On
// failure the process is killed and the error carries the end of its log.
func (s *Server) Restart(ctx context.Context) error {
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("apiserver: log: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(s.cfg.Binary, s.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = procAttr()
	exited, err := s.proc.Start(cmd)
	if err != nil {
		return fmt.Errorf("apiserver: start %s: %w", s.cfg.Binary, err)
	}
	if err := s.awaitReady(ctx, exited); err != nil {
		s.Kill()
		return err
	}
	return nil
}

// awaitReady polls /readyz until it answers 200, the process exits, ctx
// ends or ReadyWithin has passed.
func (s *Server) awaitReady(ctx context.Context, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ReadyWithin)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if s.ready(ctx) {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("apiserver: %s exited while starting\n%s", s.cfg.Binary, s.Tail())
		case <-ctx.Done():
			return fmt.Errorf("apiserver: %s not ready within %s: %w\n%s", s.cfg.Binary, s.cfg.ReadyWithin, ctx.Err(), s.Tail())
		case <-tick.C:
		}
	}
}

// ready reports whether the server answers /readyz with 200. Until the
// server has written its certificate, it is not.
func (s *Server) ready(ctx context.Context) bool {
	pem, err := os.ReadFile(s.CAFile)
	if err != nil {
		return false
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return false
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	defer tr.CloseIdleConnections()
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, s.URL+"/readyz", nil)
	if err != nil {
		return false
	}
	req.Header.Set("Authorization", "Bearer "+s.tokens[Admin])
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Kill crashes kube-apiserver (SIGKILL, continuing it first if it was
// stopped) and waits for it to exit. It does nothing when it is not
// running. The etcd keeps running.
func (s *Server) Kill() { s.proc.Kill() }

// Tail returns the last lines kube-apiserver logged.
func (s *Server) Tail() string {
	b, _ := os.ReadFile(s.logPath)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return "last lines of kube-apiserver's log:\n" + strings.Join(lines, "\n")
}
