package monitor

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/tenure-dev/tenure/cmd/internal/cli"
	"github.com/tenure-dev/tenure/cmd/internal/e2e"
	"github.com/tenure-dev/tenure/internal/testpki"
)

// webConfig writes a Prometheus web configuration file that serves TLS
// with pki's server certificate and lets user in with password (stored
// bcrypt-hashed, as the file format wants), and returns its path.
func webConfig(t *testing.T, pki *testpki.PKI, user, password string) string {
	t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf("tls_server_config:\n  cert_file: %s\n  key_file: %s\nbasic_auth_users:\n  %s: %s\n",
		pki.ServerCertFile, pki.ServerKeyFile, user, hash)
	path := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkAuthenticated checks that https://addr/path, served with the web
// configuration of webConfig(t, pki, user, password), answers 200 to user
// with password alone: 401 without credentials, with a wrong password or
// an unknown user, and no page over plain HTTP.
func checkAuthenticated(t *testing.T, pki *testpki.PKI, addr, path, user, password string) {
	t.Helper()
	// An unknown user is checked against a cost-10 bcrypt hash, one at a
	// time: slow on a loaded machine and with the race detector.
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: pki.ClientConfig()}}
	defer client.CloseIdleConnections()
	status := func(user, password string) int {
		t.Helper()
		req, err := http.NewRequest("GET", "https://"+addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if user != "" {
			req.SetBasicAuth(user, password)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET https://%s%s as %q: %v", addr, path, user, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct{ user, password string }{{"", ""}, {user, "wrong"}, {"other", password}} {
		if got := status(c.user, c.password); got != http.StatusUnauthorized {
			t.Errorf("GET %s as %q/%q = %d; want 401", path, c.user, c.password, got)
		}
	}
	if got := status(user, password); got != http.StatusOK {
		t.Errorf("GET %s with the password = %d; want 200", path, got)
	}
	if code, _ := e2e.Get(t, addr, path); code == http.StatusOK {
		t.Errorf("plain GET http://%s%s = %d; want no page without TLS", addr, path, code)
	}
}

// TestServerHTTPConfig: tenure server --http-config serves its pages with
// TLS and basic authentication.
func TestServerHTTPConfig(t *testing.T) {
	t.Parallel()
	pki := testpki.New(t)
	s := e2e.StartServer(t, t.TempDir(), "--http-config", webConfig(t, pki, "ops", "pa55"))
	checkAuthenticated(t, pki, s.HTTP, "/health", "ops", "pa55")
	checkAuthenticated(t, pki, s.HTTP, "/metrics", "ops", "pa55")
}

// TestPrometheusScrapesOverTLSWithBasicAuth: "tenure run --http
// --http-config" serves /metrics over TLS to the users of the web
// configuration file only. A real Prometheus that trusts the CA and knows
// the password scrapes it (up 1, the leader's series); one without the
// password is refused (up 0), and a plain client gets 401.
func TestPrometheusScrapesOverTLSWithBasicAuth(t *testing.T) {
	t.Parallel()
	pki := testpki.New(t)
	cfg := webConfig(t, pki, "prom", "s3cret")
	s := e2e.StartServer(t, t.TempDir())
	p := e2e.StartProc(t, "tls-run", nil, append(append([]string{}, s.Coord...), "run", "--key", "tls",
		"--holder", "tls-run", "--http", "127.0.0.1:0", "--http-config", cfg, "--", "sleep", "600")...)
	addr := httpAddr(t, p)

	checkAuthenticated(t, pki, addr, "/metrics", "prom", "s3cret")

	prom := startPrometheusJobs(t, fmt.Sprintf(`
  - job_name: tenure-auth
    scheme: https
    tls_config: {ca_file: %q}
    basic_auth: {username: prom, password: s3cret}
    static_configs: [{targets: [%q]}]
  - job_name: tenure-noauth
    scheme: https
    tls_config: {ca_file: %q}
    static_configs: [{targets: [%q]}]
`, pki.CAFile, addr, pki.CAFile, addr))
	e2e.WaitFor(t, 30*time.Second, "Prometheus to scrape over TLS with basic auth", func() bool {
		return prom.scalar(t, `up{job="tenure-auth"}`) == 1 && prom.scalar(t, `tenure_is_leader{job="tenure-auth",key="tls"}`) == 1
	})
	e2e.WaitFor(t, 10*time.Second, "Prometheus's scrape without the password to fail", func() bool {
		return prom.scalar(t, `up{job="tenure-noauth"}`) == 0
	})
	if got := prom.scalar(t, `tenure_is_leader{job="tenure-noauth"}`); got != -1 {
		t.Errorf("tenure_is_leader scraped without the password = %v; want no series", got)
	}
	// The failed TLS handshake of the plain request is logged, in the
	// log's own format.
	for _, l := range e2e.Lines(p.Err.String()) {
		if !strings.HasPrefix(l, "time=") {
			t.Errorf("stderr line %q is not a log record", l)
		}
	}
}

// TestHTTPConfigChecked: --http-config is checked before anything is
// dialled: it needs --http, and a file that does not load is named.
func TestHTTPConfigChecked(t *testing.T) {
	t.Parallel()
	bad := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(bad, []byte("tls_server_config:\n  cert_file: /nonexistent/cert.pem\n  key_file: /nonexistent/key.pem\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	closed := []string{"--endpoints", "http://127.0.0.1:1"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--key", "k", "--http-config", bad, "--", "true"}, "--http-config is set but --http is not"},
		{[]string{"run", "--key", "k", "--http", "127.0.0.1:0", "--http-config", bad, "--", "true"}, "--http-config " + bad},
		{[]string{"run", "--key", "k", "--http", "127.0.0.1:0", "--http-config", bad + ".missing", "--", "true"}, "no such file"},
	} {
		res := e2e.RunTenure(t, nil, append(append([]string{}, closed...), c.args...)...)
		if res.Code != cli.ExitUsage || !strings.Contains(res.Stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want %d naming %q", res.Description, res.Code, res.Stderr, cli.ExitUsage, c.want)
		}
	}
}
