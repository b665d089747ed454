// Package reach finds out why a server does not answer, for an error
// message: nothing listens at its address, it accepts connections and says
// nothing (a stopped process), or it refuses the TLS handshake or the
// client's certificate. Endpoints are URLs (http://host:port,
// https://host:port) or host:port pairs. Used by etcd.Dial.
package reach

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Refused tries a TCP connection to every endpoint at once, and returns the
// error when every one of them refused it (nothing listens there, so waiting
// longer cannot help); nil as soon as one is accepted, or fails in any other
// way.
func Refused(ctx context.Context, endpoints []string) error {
	errs := make(chan error, len(endpoints))
	for _, ep := range endpoints {
		go func() {
			var d net.Dialer
			conn, err := d.DialContext(ctx, "tcp", hostPort(ep))
			if err == nil {
				conn.Close()
			}
			errs <- err
		}()
	}
	var last error
	for range endpoints {
		err := <-errs
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return nil // the others' goroutines end with their dial
		}
		last = err
	}
	return last
}

// Diagnose tries a plain connection (and, for https endpoints or when
// tlsCfg is set, a TLS handshake) to every endpoint at once, and says what
// each found: "ep: what; ep: what". It returns when ctx ends, at the latest.
func Diagnose(ctx context.Context, endpoints []string, tlsCfg *tls.Config) string {
	out := make([]string, len(endpoints))
	var wg sync.WaitGroup
	for i, ep := range endpoints {
		wg.Go(func() { out[i] = ep + ": " + diagnose(ctx, ep, tlsCfg) })
	}
	wg.Wait()
	return strings.Join(out, "; ")
}

// hostPort is endpoint ep's host:port.
func hostPort(ep string) string {
	if u, err := url.Parse(ep); err == nil && u.Host != "" {
		return u.Host
	}
	return ep
}

// diagnose is Diagnose for one endpoint.
func diagnose(ctx context.Context, ep string, tlsCfg *tls.Config) string {
	secure := tlsCfg != nil
	if u, err := url.Parse(ep); err == nil && u.Host != "" {
		secure = u.Scheme == "https" || (u.Scheme != "http" && tlsCfg != nil)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", hostPort(ep))
	if err != nil {
		if ctx.Err() != nil {
			return "TCP connection not established"
		}
		return err.Error()
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		conn.SetDeadline(deadline)
	}
	if !secure || tlsCfg == nil {
		return "connection accepted, but no answer"
	}
	return handshake(ctx, conn, hostPort(ep), tlsCfg)
}

// handshake runs a TLS handshake on conn, offering HTTP/2 as gRPC does, and
// says how it went.
func handshake(ctx context.Context, conn net.Conn, hostport string, tlsCfg *tls.Config) string {
	cfg := tlsCfg.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName, _, _ = net.SplitHostPort(hostport)
	}
	cfg.NextProtos = []string{"h2"}
	tc := tls.Client(conn, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		return "TLS: " + err.Error()
	}
	// TLS 1.3 servers reject a client certificate after the handshake:
	// the alert arrives with the first read.
	tc.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	var b [1]byte
	if _, err := tc.Read(b[:]); err != nil {
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			return "TLS: " + err.Error()
		}
	}
	return "TLS connection established, but no answer"
}
