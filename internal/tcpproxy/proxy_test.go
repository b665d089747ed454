package tcpproxy

import (
	"bufio"
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
