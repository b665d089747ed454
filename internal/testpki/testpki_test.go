package testpki_test

import (
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/testpki"
)

// handshake runs a TLS handshake over loopback TCP between a server with
// server and a client with client, and returns each side's error.
func handshake(t *testing.T, server, client *tls.Config) (serverErr, clientErr error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	done := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		done <- tls.Server(c, server).Handshake()
	}()
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 10 * time.Second}, Config: client}
	c, clientErr := d.Dial("tcp", l.Addr().String())
	// Wait for the server before closing: with TLS 1.3 the client may be done
	// before the server has checked (and refused) its certificate.
	serverErr = <-done
	if c != nil {
		c.Close()
	}
	return serverErr, clientErr
}

func TestPKIHandshake(t *testing.T) {
	p, other := testpki.New(t), testpki.New(t)
	localhost := p.ClientConfig()
	localhost.ServerName = "localhost"
	noCert := p.ClientConfig()
	noCert.Certificates = nil
	wrongCA := p.ClientConfig()
	wrongCA.RootCAs = other.Pool
	// Cluster peers present the server certificate as clients too.
	peer := p.ClientConfig()
	peer.Certificates = []tls.Certificate{p.ServerCert}
	for _, tc := range []struct {
		name   string
		client *tls.Config
		ok     bool
	}{
		{"127.0.0.1", p.ClientConfig(), true},
		{"localhost", localhost, true},
		{"peer", peer, true},
		{"no client certificate", noCert, false},
		{"wrong CA", wrongCA, false},
		{"client from another CA", other.ClientConfig(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			serverErr, clientErr := handshake(t, p.ServerConfig(), tc.client)
			if ok := serverErr == nil && clientErr == nil; ok != tc.ok {
				t.Errorf("handshake: server error %v, client error %v; want success %v", serverErr, clientErr, tc.ok)
			}
		})
	}
}

func TestPKIFiles(t *testing.T) {
	p := testpki.New(t)
	for _, kp := range [][2]string{{p.ServerCertFile, p.ServerKeyFile}, {p.ClientCertFile, p.ClientKeyFile}} {
		if _, err := tls.LoadX509KeyPair(kp[0], kp[1]); err != nil {
			t.Errorf("LoadX509KeyPair(%s, %s): %v", kp[0], kp[1], err)
		}
	}
}
