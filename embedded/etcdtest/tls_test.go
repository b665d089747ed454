package etcdtest_test

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/embedded"
	"github.com/tenure-dev/tenure/etcd"
	"github.com/tenure-dev/tenure/internal/testpki"
)

func TestDialTLS(t *testing.T) {
	pki := testpki.New(t)
	urls, err := embedded.FreeLocalURLs(2)
	if err != nil {
		t.Fatal(err)
	}
	client := "https://" + strings.TrimPrefix(urls[0], "http://")
	s, err := embedded.Start(t.Context(), embedded.Config{
		Dir:        t.TempDir(),
		ClientURLs: []string{client},
		PeerURLs:   urls[1:],
		ClientTLS: embedded.TLS{
			CertFile: pki.ServerCertFile, KeyFile: pki.ServerKeyFile,
			TrustedCAFile: pki.CAFile, ClientCertAuth: true,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if eps := s.Endpoints(); len(eps) != 1 || eps[0] != client {
		t.Fatalf("Endpoints() = %v; want [%s]", eps, client)
	}

	// Without a client certificate: refused, within the dial timeout.
	start := time.Now()
	c, err := etcd.Dial(context.Background(), etcd.Config{
		Endpoints: s.Endpoints(), DialTimeout: time.Second,
		TLS: &tls.Config{RootCAs: pki.Pool},
	})
	if err == nil {
		c.Close()
		t.Fatal("Dial without a client certificate succeeded")
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Dial without a client certificate took %s", took)
	}
	if !strings.Contains(err.Error(), "certificate required") {
		t.Errorf("Dial without a client certificate error = %q; want it to say the certificate is required", err)
	}

	c, err = etcd.Dial(context.Background(), etcd.Config{
		Endpoints: s.Endpoints(),
		TLS:       pki.ClientConfig(),
	})
	if err != nil {
		t.Fatalf("Dial with TLS: %v", err)
	}
	defer c.Close()
	g := mustAcquire(t, c, "tls/k", "alice", 2*time.Second)
	if g.Token == 0 {
		t.Errorf("grant over TLS = %v", g)
	}
	// An open watch does not hold up the server's shutdown.
	ch, err := c.Watch(t.Context(), "tls/k")
	if err != nil {
		t.Fatal(err)
	}
	<-ch
	start = time.Now()
	s.Close()
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Close with an open TLS watch took %s", took)
	}
}
