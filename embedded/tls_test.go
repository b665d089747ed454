package embedded_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/embedded"
)

// writePKI writes a throwaway CA and a certificate for 127.0.0.1, usable by
// servers and clients alike (peers are both), and returns their files.
func writePKI(t *testing.T) embedded.TLS {
	t.Helper()
	dir := t.TempDir()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tenure test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "member"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	files := embedded.TLS{
		CertFile:       filepath.Join(dir, "member.pem"),
		KeyFile:        filepath.Join(dir, "member-key.pem"),
		TrustedCAFile:  filepath.Join(dir, "ca.pem"),
		ClientCertAuth: true,
	}
	for name, b := range map[string]*pem.Block{
		files.CertFile:      {Type: "CERTIFICATE", Bytes: der},
		files.KeyFile:       {Type: "EC PRIVATE KEY", Bytes: kb},
		files.TrustedCAFile: {Type: "CERTIFICATE", Bytes: caDER},
	} {
		if err := os.WriteFile(name, pem.EncodeToMemory(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return files
}

func TestClusterWithPeerTLS(t *testing.T) {
	tls := writePKI(t)
	cfgs, err := embedded.LocalCluster(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	https := func(u string) string { return "https://" + strings.TrimPrefix(u, "http://") }
	var members []string
	for i := range cfgs {
		cfgs[i].PeerURLs = []string{https(cfgs[i].PeerURLs[0])}
		cfgs[i].PeerTLS = tls
		members = append(members, cfgs[i].Name+"="+cfgs[i].PeerURLs[0])
	}
	for i := range cfgs {
		cfgs[i].InitialCluster = strings.Join(members, ",")
	}
	servers := make([]*embedded.Server, len(cfgs))
	errs := make([]error, len(cfgs))
	var wg sync.WaitGroup
	for i, cfg := range cfgs {
		wg.Go(func() { servers[i], errs[i] = embedded.Start(ctx(t), cfg) })
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, s := range servers {
			if s != nil {
				s.Close()
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	// Raft traffic crosses the TLS peer links: a write through one member is
	// read through another.
	if _, err := client(t, servers[0].Endpoints()).Put(ctx(t), "k", "over tls"); err != nil {
		t.Fatal(err)
	}
	resp, err := client(t, servers[1].Endpoints()).Get(ctx(t), "k")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "over tls" {
		t.Fatalf("Get through another member = %v, %v", resp, err)
	}
}
