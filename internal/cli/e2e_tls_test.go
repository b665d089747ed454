package cli

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/embedded"
)

// pki writes a CA and, signed by it, a server certificate for 127.0.0.1 and
// a client certificate, as PEM files in dir.
type pki struct{ ca, serverCert, serverKey, clientCert, clientKey, otherCA string }

func newPKI(t *testing.T, dir string) pki {
	t.Helper()
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	serial := int64(1)
	cert := func(tmpl *x509.Certificate, parent *x509.Certificate, key, signer *ecdsa.PrivateKey) (*x509.Certificate, []byte) {
		serial++
		tmpl.SerialNumber = big.NewInt(serial)
		tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
		if parent == nil {
			parent = tmpl
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := x509.ParseCertificate(der)
		return c, der
	}
	keyDER := func(k *ecdsa.PrivateKey) []byte {
		b, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var p pki
	caKey := newKey()
	caCert, caDER := cert(&x509.Certificate{Subject: pkix.Name{CommonName: "tenure test CA"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}, nil, caKey, caKey)
	p.ca = write("ca.pem", "CERTIFICATE", caDER)
	otherKey := newKey()
	_, otherDER := cert(&x509.Certificate{Subject: pkix.Name{CommonName: "another CA"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}, nil, otherKey, otherKey)
	p.otherCA = write("other-ca.pem", "CERTIFICATE", otherDER)

	sKey := newKey()
	_, sDER := cert(&x509.Certificate{Subject: pkix.Name{CommonName: "server"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}, caCert, sKey, caKey)
	p.serverCert, p.serverKey = write("server.pem", "CERTIFICATE", sDER), write("server-key.pem", "EC PRIVATE KEY", keyDER(sKey))
	cKey := newKey()
	_, cDER := cert(&x509.Certificate{Subject: pkix.Name{CommonName: "client"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}, caCert, cKey, caKey)
	p.clientCert, p.clientKey = write("client.pem", "CERTIFICATE", cDER), write("client-key.pem", "EC PRIVATE KEY", keyDER(cKey))
	return p
}

// TestTLS: a tenure server with TLS and client certificates; tenure
// connects with --tls-ca, --tls-cert and --tls-key, and is refused,
// clearly, without a client certificate or with the wrong CA.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	p := newPKI(t, dir)
	urls, err := embedded.FreeLocalURLs(2)
	if err != nil {
		t.Fatal(err)
	}
	client := strings.Replace(urls[0], "http://", "https://", 1)
	srv := awaitServer(t, startProc(t, "server", nil, "server", "--data-dir", filepath.Join(dir, "data"),
		"--listen-client", client, "--listen-peer", urls[1], "--http", "",
		"--server-tls-cert", p.serverCert, "--server-tls-key", p.serverKey, "--server-tls-ca", p.ca), dir)
	if !strings.HasPrefix(srv.endpoint, "https://") {
		t.Fatalf("server endpoint %q; want https://", srv.endpoint)
	}
	base := []string{"--endpoints", srv.endpoint, "--dial-timeout", "2s"}

	res := runTenure(t, nil, append(base, "--tls-ca", p.ca, "--tls-cert", p.clientCert, "--tls-key", p.clientKey,
		"run", "--key", "tls", "--", "sh", "-c", `printf %s "$TENURE_FENCING_TOKEN"`)...)
	if res.code != 0 || res.stdout == "" {
		t.Fatalf("%s: exit %d, stdout %q; want 0 and a token\n%s", res.description, res.code, res.stdout, res.stderr)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no client certificate", []string{"--tls-ca", p.ca}, "TLS"},
		{"wrong CA", []string{"--tls-ca", p.otherCA, "--tls-cert", p.clientCert, "--tls-key", p.clientKey}, "certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runTenure(t, nil, append(append(base, tc.args...), "status", "--key", "tls")...)
			if res.code != ExitError || !strings.Contains(res.stderr, tc.want) {
				t.Errorf("%s: exit %d; want %d mentioning %q\n%s", res.description, res.code, ExitError, tc.want, res.stderr)
			}
			if res.took > 4*time.Second {
				t.Errorf("%s took %s; want within the 2s dial timeout", res.description, res.took)
			}
		})
	}
}
