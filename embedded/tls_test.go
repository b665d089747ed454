package embedded_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/tenure-dev/tenure/embedded"
	"github.com/tenure-dev/tenure/internal/testpki"
)

func TestClusterWithPeerTLS(t *testing.T) {
	pki := testpki.New(t)
	// Peers are servers and clients alike: they all present the server
	// certificate, and require one signed by the CA.
	tls := embedded.TLS{
		CertFile: pki.ServerCertFile, KeyFile: pki.ServerKeyFile,
		TrustedCAFile: pki.CAFile, ClientCertAuth: true,
	}
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
