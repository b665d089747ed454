package chaos

import (
	"bufio"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// echoServer answers every line with the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader, timeout time.Duration) (time.Duration, error) {
	t.Helper()
	start := time.Now()
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return 0, err
	}
	line, err := r.ReadString('\n')
	if err == nil && line != "ping\n" {
		t.Fatalf("echo = %q; want ping", line)
	}
	return time.Since(start), err
}

func TestProxyFaults(t *testing.T) {
	p, err := NewProxy(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if _, err := roundTrip(t, c, r, time.Second); err != nil {
		t.Fatalf("round trip through a healthy proxy: %v", err)
	}

	p.SetLatency(Down, 150*time.Millisecond)
	if d, err := roundTrip(t, c, r, 2*time.Second); err != nil || d < 150*time.Millisecond {
		t.Fatalf("round trip with 150ms reply latency took %s (err %v); want ≥ 150ms", d, err)
	}
	p.Heal()

	for _, dir := range []Direction{Up, Down} {
		p.Hold(dir)
		if _, err := roundTrip(t, c, r, 200*time.Millisecond); !isTimeout(err) {
			t.Fatalf("round trip with %s held: err = %v; want a timeout", dir, err)
		}
		p.Release(dir)
		// The held bytes are delivered late, not dropped.
		c.SetDeadline(time.Now().Add(time.Second))
		if line, err := r.ReadString('\n'); err != nil || line != "ping\n" {
			t.Fatalf("after releasing %s: read %q, %v; want the held ping", dir, line, err)
		}
	}

	if n := p.Reset(); n != 1 {
		t.Fatalf("Reset() = %d connections; want 1", n)
	}
	if _, err := roundTrip(t, c, r, time.Second); err == nil {
		t.Fatal("round trip on a reset connection succeeded")
	}
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := roundTrip(t, c2, bufio.NewReader(c2), time.Second); err != nil {
		t.Fatalf("new connection after Reset: %v", err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
