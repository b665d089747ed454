package tcpproxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echoServer echoes lines until the listener closes.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	conns := make(chan net.Conn, 16)
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns <- c
			go func() { _, _ = io.Copy(c, c) }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		close(conns)
		for c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

func roundTrip(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return err
	}
	_, err = bufio.NewReader(c).ReadString('\n')
	return err
}

func TestCutAndHeal(t *testing.T) {
	p, err := New("tcp", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	if err := roundTrip(p.Addr()); err != nil {
		t.Fatalf("round trip before the cut: %v; want nil", err)
	}

	// A connection open at the cut is closed by it.
	open, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	if _, err := open.Write([]byte("x\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(open).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	p.Cut()
	if !p.IsCut() {
		t.Fatal("IsCut() = false after Cut; want true")
	}
	open.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := open.Read(make([]byte, 1)); err == nil {
		t.Fatal("read on a connection open at the cut succeeded; want an error")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("connection open at the cut stayed open; want it closed")
	}
	if err := roundTrip(p.Addr()); err == nil {
		t.Fatal("round trip through a cut proxy succeeded; want an error")
	}

	p.Heal()
	if err := roundTrip(p.Addr()); err != nil {
		t.Fatalf("round trip after Heal: %v; want nil", err)
	}
}

func TestBadNetwork(t *testing.T) {
	if _, err := New("udp", "127.0.0.1:1"); err == nil {
		t.Fatal(`New("udp", …) succeeded; want an error`)
	}
}

func TestCloseIsIdempotent(t *testing.T) {
	p, err := New("tcp", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := roundTrip(p.Addr()); err != nil {
		t.Fatal(err)
	}
	p.Close()
	p.Close()
	if err := roundTrip(p.Addr()); err == nil {
		t.Fatal("round trip through a closed proxy succeeded; want an error")
	}
}

func roundTripOn(t *testing.T, c net.Conn, r *bufio.Reader, timeout time.Duration) (time.Duration, error) {
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

// Latency delays, holds keep bytes and deliver them late, and Reset
// closes open connections but accepts new ones.
func TestFaults(t *testing.T) {
	p, err := New("tcp", echoServer(t))
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
	if _, err := roundTripOn(t, c, r, time.Second); err != nil {
		t.Fatalf("round trip through a healthy proxy: %v", err)
	}

	p.SetLatency(Down, 150*time.Millisecond)
	if d, err := roundTripOn(t, c, r, 2*time.Second); err != nil || d < 150*time.Millisecond {
		t.Fatalf("round trip with 150ms reply latency took %s (err %v); want ≥ 150ms", d, err)
	}
	p.Heal()

	for _, dir := range []Direction{Up, Down} {
		p.Hold(dir)
		if _, err := roundTripOn(t, c, r, 200*time.Millisecond); !isTimeout(err) {
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
	if _, err := roundTripOn(t, c, r, time.Second); err == nil {
		t.Fatal("round trip on a reset connection succeeded")
	}
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := roundTripOn(t, c2, bufio.NewReader(c2), time.Second); err != nil {
		t.Fatalf("new connection after Reset: %v", err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
