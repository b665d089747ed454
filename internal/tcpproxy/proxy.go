// Package tcpproxy forwards TCP connections from a loopback port to a
// server and injects network faults into them: a cut (the server looks
// down), a partition or one-way blackhole (bytes held, not dropped), added
// latency per direction, and resets of every open connection. The demo cuts
// nodes off their coordinator with it; tenure verify (package chaos) puts
// one between every node and the coordinator and the register.
package tcpproxy

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Direction is one way through a Proxy.
type Direction int

// The two directions through a Proxy.
const (
	// Up carries requests: client (node) to server (coordinator, register).
	Up Direction = iota
	// Down carries replies: server to client.
	Down
)

func (d Direction) String() string {
	if d == Up {
		return "requests"
	}
	return "replies"
}

// A Proxy forwards TCP connections from a loopback port to a target address
// and injects network faults into them: holding one or both directions (a
// partition or a one-way blackhole: bytes are kept, not dropped, as TCP
// retransmission would deliver them once the network heals), added latency
// per direction, and resetting every open connection.
//
// etcd's go.etcd.io/etcd/pkg/v3/proxy was the first choice; it cannot reset
// established connections, listens on every interface, and drops bytes when
// blackholing (which corrupts an HTTP/2 stream rather than delaying it), so
// tenure carries this small one.
//
// A Proxy is safe for concurrent use.
type Proxy struct {
	ln      net.Listener
	network string
	target  string
	done    chan struct{}
	wg      sync.WaitGroup

	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	cut     bool
	hold    [2]chan struct{} // non-nil while the direction is held; closed to release
	latency [2]time.Duration
	closed  bool
}

// New listens on a free loopback port and forwards every connection to
// target, an address on network ("tcp" host:port, or "unix" socket path).
// Close stops it.
func New(network, target string) (*Proxy, error) {
	if network != "tcp" && network != "unix" {
		return nil, fmt.Errorf("tcpproxy: network %q: want tcp or unix", network)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("tcpproxy: proxy to %s: %w", target, err)
	}
	p := &Proxy{ln: ln, network: network, target: target, done: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's listening address, host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target is the address the proxy forwards to.
func (p *Proxy) Target() string { return p.target }

// Hold stops forwarding in direction d: bytes sent that way wait in the
// proxy (and, once its buffer is full, in the sender's socket) until Release.
// Holding both directions is a partition; one is a one-way blackhole.
func (p *Proxy) Hold(d Direction) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hold[d] == nil {
		p.hold[d] = make(chan struct{})
	}
}

// Release resumes forwarding in direction d; held bytes flow on.
func (p *Proxy) Release(d Direction) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hold[d] != nil {
		close(p.hold[d])
		p.hold[d] = nil
	}
}

// SetLatency delays every chunk forwarded in direction d by lat (0 removes
// the delay).
func (p *Proxy) SetLatency(d Direction, lat time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latency[d] = lat
}

// Cut severs the link: open connections are reset and new ones are closed
// as soon as they are accepted, so the client sees its server as down.
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.cut = true
	p.mu.Unlock()
	p.Reset()
}

// IsCut reports whether the link is severed.
func (p *Proxy) IsCut() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut
}

// Heal ends a cut, releases both directions and removes all latency.
func (p *Proxy) Heal() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
	p.Release(Up)
	p.Release(Down)
	p.SetLatency(Up, 0)
	p.SetLatency(Down, 0)
}

// Reset closes every open connection with a TCP reset on both sides. New
// connections are accepted as before.
func (p *Proxy) Reset() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		c.Close()
		delete(p.conns, c)
		n++
	}
	return n / 2
}

// Close stops the proxy: it stops listening, resets every connection and
// waits for its goroutines. Close is idempotent.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.done)
	p.mu.Unlock()
	err := p.ln.Close()
	p.Reset()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			select {
			case <-p.done:
				return
			case <-time.After(10 * time.Millisecond):
				continue
			}
		}
		if p.IsCut() {
			in.Close()
			continue
		}
		out, err := net.DialTimeout(p.network, p.target, 2*time.Second)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		if p.closed || p.cut {
			closed := p.closed
			p.mu.Unlock()
			in.Close()
			out.Close()
			if closed {
				return
			}
			continue
		}
		p.conns[in] = struct{}{}
		p.conns[out] = struct{}{}
		p.mu.Unlock()
		var pair sync.WaitGroup
		pair.Add(2)
		p.wg.Add(3)
		go func() { defer p.wg.Done(); defer pair.Done(); p.pipe(out, in, Up) }()
		go func() { defer p.wg.Done(); defer pair.Done(); p.pipe(in, out, Down) }()
		go func() {
			defer p.wg.Done()
			pair.Wait()
			p.mu.Lock()
			delete(p.conns, in)
			delete(p.conns, out)
			p.mu.Unlock()
			in.Close()
			out.Close()
		}()
	}
}

// pipe copies src to dst in direction d, obeying holds and latency: each
// chunk is delayed by the latency from when it was read (a propagation
// delay: chunks in flight do not add up). At the end of src it half-closes
// dst.
func (p *Proxy) pipe(dst, src net.Conn, d Direction) {
	type chunk struct {
		b  []byte
		at time.Time
	}
	q := make(chan chunk, 256)
	go func() {
		defer close(q)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				select {
				case q <- chunk{buf[:n], time.Now()}:
				case <-p.done:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		for range q { // let the reader finish
		}
	}()
	for c := range q {
		if !p.wait(d, c.at) {
			src.Close()
			return
		}
		if _, err := dst.Write(c.b); err != nil {
			src.Close()
			return
		}
	}
	if hc, ok := dst.(interface{ CloseWrite() error }); ok {
		_ = hc.CloseWrite()
	} else {
		dst.Close()
	}
}

// wait blocks while direction d is held, then until the chunk read at
// arrived has been delayed by the direction's latency. It reports false
// when the proxy closed meanwhile.
func (p *Proxy) wait(d Direction, arrived time.Time) bool {
	for {
		p.mu.Lock()
		held, lat := p.hold[d], p.latency[d]
		p.mu.Unlock()
		if held == nil {
			if wait := time.Until(arrived.Add(lat)); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-t.C:
				case <-p.done:
					t.Stop()
					return false
				}
			}
			return true
		}
		select {
		case <-held:
		case <-p.done:
			return false
		}
	}
}
