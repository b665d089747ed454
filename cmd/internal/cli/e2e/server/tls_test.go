package server

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/cli"
	"github.com/tenure-dev/tenure/cmd/internal/e2e"
	"github.com/tenure-dev/tenure/embedded"
	"github.com/tenure-dev/tenure/internal/testpki"
)

// TestTLS: a tenure server with TLS and client certificates; tenure
// connects with --tls-ca, --tls-cert and --tls-key, and is refused,
// clearly, without a client certificate or with the wrong CA.
func TestTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := testpki.New(t)
	otherCA := testpki.New(t).CAFile // a CA that signed none of p's certificates
	urls, err := embedded.FreeLocalURLs(2)
	if err != nil {
		t.Fatal(err)
	}
	client := strings.Replace(urls[0], "http://", "https://", 1)
	srv := e2e.AwaitServer(t, e2e.StartProc(t, "server", nil, "server", "--data-dir", filepath.Join(dir, "data"),
		"--listen-client", client, "--listen-peer", urls[1], "--http", "",
		"--server-tls-cert", p.ServerCertFile, "--server-tls-key", p.ServerKeyFile, "--server-tls-ca", p.CAFile), dir)
	if !strings.HasPrefix(srv.Endpoint, "https://") {
		t.Fatalf("server endpoint %q; want https://", srv.Endpoint)
	}
	base := []string{"--endpoints", srv.Endpoint, "--dial-timeout", "2s"}

	res := e2e.RunTenure(t, nil, append(base, "--tls-ca", p.CAFile, "--tls-cert", p.ClientCertFile, "--tls-key", p.ClientKeyFile,
		"run", "--key", "tls", "--", "sh", "-c", `printf %s "$TENURE_FENCING_TOKEN"`)...)
	if res.Code != 0 || res.Stdout == "" {
		t.Fatalf("%s: exit %d, stdout %q; want 0 and a token\n%s", res.Description, res.Code, res.Stdout, res.Stderr)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no client certificate", []string{"--tls-ca", p.CAFile}, "TLS"},
		{"wrong CA", []string{"--tls-ca", otherCA, "--tls-cert", p.ClientCertFile, "--tls-key", p.ClientKeyFile}, "certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := e2e.RunTenure(t, nil, append(append(base, tc.args...), "status", "--key", "tls")...)
			if res.Code != cli.ExitUnavailable || !strings.Contains(res.Stderr, tc.want) {
				t.Errorf("%s: exit %d; want %d mentioning %q\n%s", res.Description, res.Code, cli.ExitUnavailable, tc.want, res.Stderr)
			}
			if res.Took > 2*time.Second+e2e.Slack {
				t.Errorf("%s took %s; want within the 2s dial timeout + slack", res.Description, res.Took)
			}
		})
	}
}
