// Package testpki makes throwaway certificate authorities and certificates
// for tests. It is for tests only: the keys are generated on the fly, the
// certificates are valid for an hour either side of now, and every failure
// ends the test.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// PKI is a CA and two certificates it signed, written as PEM files into a
// test's temporary directory:
//
//   - a server certificate for 127.0.0.1 and localhost, usable for server
//     and client authentication alike (cluster peers are both);
//   - a client certificate, for client authentication only.
type PKI struct {
	// CAFile holds the CA certificate.
	CAFile string
	// ServerCertFile and ServerKeyFile hold the server certificate and key.
	ServerCertFile, ServerKeyFile string
	// ClientCertFile and ClientKeyFile hold the client certificate and key.
	ClientCertFile, ClientKeyFile string

	// Pool holds the CA certificate, to trust it.
	Pool *x509.CertPool
	// ServerCert and ClientCert are the certificates with their keys.
	ServerCert, ClientCert tls.Certificate
}

// New makes a fresh CA and its certificates, in files in t.TempDir(). Two
// calls make two unrelated CAs: one's certificates are not trusted by the
// other's Pool.
func New(t testing.TB) *PKI {
	t.Helper()
	dir := t.TempDir()
	is := &issuer{t: t, now: time.Now()}
	ca, caKey, caPEM, _ := is.issue(&x509.Certificate{
		Subject: pkix.Name{CommonName: "tenure test CA"},
		IsCA:    true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}, nil, nil)
	_, _, serverPEM, serverKeyPEM := is.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "server"},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
	}, ca, caKey)
	_, _, clientPEM, clientKeyPEM := is.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "client"},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ca, caKey)

	p := &PKI{
		CAFile:         write(t, dir, "ca.pem", caPEM),
		ServerCertFile: write(t, dir, "server.pem", serverPEM),
		ServerKeyFile:  write(t, dir, "server-key.pem", serverKeyPEM),
		ClientCertFile: write(t, dir, "client.pem", clientPEM),
		ClientKeyFile:  write(t, dir, "client-key.pem", clientKeyPEM),
		Pool:           x509.NewCertPool(),
		ServerCert:     pair(t, serverPEM, serverKeyPEM),
		ClientCert:     pair(t, clientPEM, clientKeyPEM),
	}
	p.Pool.AddCert(ca)
	return p
}

// issuer makes the keys and certificates of one PKI, numbered from 1, valid
// for an hour either side of now.
type issuer struct {
	t      testing.TB
	now    time.Time
	serial int64
}

// issue makes a key and a certificate from tmpl for it, signed by parent's
// key (self-signed when parent is nil), and returns them PEM-encoded along
// with the parsed certificate and key.
func (is *issuer) issue(tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (cert *x509.Certificate, key *ecdsa.PrivateKey, certPEM, keyPEM []byte) {
	t := is.t
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	is.serial++
	tmpl.SerialNumber = big.NewInt(is.serial)
	tmpl.NotBefore, tmpl.NotAfter = is.now.Add(-time.Hour), is.now.Add(time.Hour)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	if cert, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key,
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}

// write writes data to file name in dir, and returns its path.
func write(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// pair parses a PEM certificate and key into a tls.Certificate.
func pair(t testing.TB, certPEM, keyPEM []byte) tls.Certificate {
	t.Helper()
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ServerConfig returns a TLS configuration for a server presenting the
// server certificate and requiring a client certificate signed by the CA.
func (p *PKI) ServerConfig() *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{p.ServerCert},
		ClientCAs:    p.Pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
	}
}

// ClientConfig returns a TLS configuration for a client trusting the CA and
// presenting the client certificate. ServerName is left to the caller (or
// to whatever dials with it).
func (p *PKI) ClientConfig() *tls.Config {
	return &tls.Config{
		RootCAs:      p.Pool,
		Certificates: []tls.Certificate{p.ClientCert},
	}
}
