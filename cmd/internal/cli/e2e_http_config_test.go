package cli

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

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

// TestPrometheusScrapesOverTLSWithBasicAuth: "tenure run --http
// --http-config" serves /metrics over TLS to the users of the web
// configuration file only. A real Prometheus that trusts the CA and knows
// the password scrapes it (up 1, the leader's series); one without the
// password is refused (up 0), and a plain client gets 401.
func TestPrometheusScrapesOverTLSWithBasicAuth(t *testing.T) {
	t.Parallel()
	pki := testpki.New(t)
	cfg := webConfig(t, pki, "prom", "s3cret")
	s := startServer(t, t.TempDir())
	p := startProc(t, "tls-run", nil, append(append([]string{}, s.coord...), "run", "--key", "tls",
		"--holder", "tls-run", "--http", "127.0.0.1:0", "--http-config", cfg, "--", "sleep", "600")...)
	addr := httpAddr(t, p)

	client := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{TLSClientConfig: pki.ClientConfig()}}
	status := func(t *testing.T, user, password string) int {
		t.Helper()
		req, err := http.NewRequest("GET", "https://"+addr+"/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		if user != "" {
			req.SetBasicAuth(user, password)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET https://%s/metrics as %q: %v", addr, user, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct{ user, password string }{{"", ""}, {"prom", "wrong"}, {"other", "s3cret"}} {
		if got := status(t, c.user, c.password); got != http.StatusUnauthorized {
			t.Errorf("GET /metrics as %q/%q = %d; want 401", c.user, c.password, got)
		}
	}
	if got := status(t, "prom", "s3cret"); got != http.StatusOK {
		t.Errorf("GET /metrics with the password = %d; want 200", got)
	}
	if code, body := get(t, addr, "/metrics"); code == http.StatusOK || strings.Contains(body, "tenure_is_leader") {
		t.Errorf("plain GET http://%s/metrics = %d; want no metrics without TLS", addr, code)
	}

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
	waitFor(t, 30*time.Second, "Prometheus to scrape over TLS with basic auth", func() bool {
		return prom.scalar(t, `up{job="tenure-auth"}`) == 1 && prom.scalar(t, `tenure_is_leader{job="tenure-auth",key="tls"}`) == 1
	})
	waitFor(t, 10*time.Second, "Prometheus's scrape without the password to fail", func() bool {
		return prom.scalar(t, `up{job="tenure-noauth"}`) == 0
	})
	if got := prom.scalar(t, `tenure_is_leader{job="tenure-noauth"}`); got != -1 {
		t.Errorf("tenure_is_leader scraped without the password = %v; want no series", got)
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
		res := runTenure(t, nil, append(append([]string{}, closed...), c.args...)...)
		if res.code != ExitUsage || !strings.Contains(res.stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want %d naming %q", res.description, res.code, res.stderr, ExitUsage, c.want)
		}
	}
}
