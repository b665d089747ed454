package reach_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tenure-dev/tenure/internal/freeport"
	"github.com/tenure-dev/tenure/internal/reach"
	"github.com/tenure-dev/tenure/internal/testpki"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	ls, err := freeport.Listen(1)
	if err != nil {
		t.Fatal(err)
	}
	addr := ls[0].Addr().String()
	ls[0].Close()
	return addr
}

// serve accepts connections on a loopback listener and holds them without a
// word (wrapped in TLS with cfg when cfg is set, and handshaken) until the
// test ends.
func serve(t *testing.T, cfg *tls.Config) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { l.Close(); <-done })
	go func() {
		defer close(done)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			if cfg != nil {
				tc := tls.Server(c, cfg)
				tc.SetDeadline(time.Now().Add(5 * time.Second))
				tc.Handshake() // a refused client certificate fails here
				c = tc
			}
			conns = append(conns, c)
		}
	}()
	return l.Addr().String()
}

func TestRefused(t *testing.T) {
	closed, silent := closedAddr(t), serve(t, nil)
	tests := []struct {
		name      string
		endpoints []string
		refused   bool
	}{
		{"one closed port", []string{closed}, true},
		{"closed, as a URL", []string{"http://" + closed}, true},
		{"two closed ports", []string{closed, "https://" + closedAddr(t)}, true},
		{"a listener", []string{silent}, false},
		{"a closed port and a listener", []string{"http://" + closed, "http://" + silent}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := reach.Refused(t.Context(), tc.endpoints)
			if got := err != nil; got != tc.refused || (err != nil && !errors.Is(err, syscall.ECONNREFUSED)) {
				t.Errorf("Refused(%v) = %v; want refused %v (wrapping ECONNREFUSED)", tc.endpoints, err, tc.refused)
			}
		})
	}
}

func TestDiagnose(t *testing.T) {
	pki := testpki.New(t)
	accepting := pki.ServerConfig()
	accepting.ClientAuth = tls.VerifyClientCertIfGiven
	closed, silent := closedAddr(t), serve(t, nil)
	needsCert, tlsSilent := serve(t, pki.ServerConfig()), serve(t, accepting)
	noCert := &tls.Config{RootCAs: pki.Pool}
	tests := []struct {
		name     string
		endpoint string
		tls      *tls.Config
		want     string
	}{
		{"closed", "http://" + closed, nil, "connection refused"},
		{"silent", "http://" + silent, nil, "connection accepted, but no answer"},
		{"http with TLS set: plain", "http://" + silent, noCert, "connection accepted, but no answer"},
		{"host:port with TLS set: TLS", needsCert, noCert, "TLS: remote error: tls: certificate required"},
		{"certificate required", "https://" + needsCert, noCert, "TLS: remote error: tls: certificate required"},
		{"untrusted server", "https://" + tlsSilent, &tls.Config{}, "TLS: tls: failed to verify certificate"},
		{"TLS and silent", "https://" + tlsSilent, pki.ClientConfig(), "TLS connection established, but no answer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			got := reach.Diagnose(ctx, []string{tc.endpoint}, tc.tls)
			if !strings.HasPrefix(got, tc.endpoint+": ") || !strings.Contains(got, tc.want) {
				t.Errorf("Diagnose(%s) = %q; want the endpoint, then %q", tc.endpoint, got, tc.want)
			}
		})
	}
	t.Run("several, in order", func(t *testing.T) {
		eps := []string{"http://" + silent, closed}
		got := reach.Diagnose(t.Context(), eps, nil)
		if !strings.HasPrefix(got, eps[0]+": connection accepted, but no answer; "+closed+": ") || !strings.Contains(got, "refused") {
			t.Errorf("Diagnose(%v) = %q; want both, in order", eps, got)
		}
	})
}
