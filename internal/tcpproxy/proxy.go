// Package tcpproxy is a TCP forwarder that can be cut and healed: a network
// partition between one client and its server, for demos and tests.
package tcpproxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// Proxy listens on a loopback port and forwards every connection to a
// target. Cut severs the link; Heal restores it. Its methods are safe for
// concurrent use.
type Proxy struct {
	ln      net.Listener
	network string
	target  string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}

	wg     sync.WaitGroup
	closed chan struct{}
	once   sync.Once
}

// New starts a proxy on 127.0.0.1 (a free port) to target, an address on
// network ("tcp" host:port, or "unix" socket path). The caller must Close it.
func New(network, target string) (*Proxy, error) {
	if network != "tcp" && network != "unix" {
		return nil, fmt.Errorf("tcpproxy: network %q: want tcp or unix", network)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("tcpproxy: listen: %w", err)
	}
	p := &Proxy{ln: ln, network: network, target: target, conns: make(map[net.Conn]struct{}), closed: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port: point clients here.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut severs the link: open connections are closed and new ones are closed
// as soon as they are accepted, so the client sees its server as down.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
}

// Heal restores the link for new connections.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

// IsCut reports whether the link is severed.
func (p *Proxy) IsCut() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut
}

// Close stops listening, closes every connection and waits for the
// forwarding goroutines to end. It is idempotent.
func (p *Proxy) Close() error {
	p.once.Do(func() {
		close(p.closed)
		p.ln.Close()
		p.mu.Lock()
		for c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
	})
	p.wg.Wait()
	return nil
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			select {
			case <-p.closed:
				return
			default:
				continue
			}
		}
		if !p.track(c) {
			c.Close()
			continue
		}
		p.wg.Add(1)
		go p.forward(c)
	}
}

// track registers c, or reports false when the link is cut or the proxy is
// closing.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.closed:
		return false
	default:
	}
	if p.cut {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
	c.Close()
}

func (p *Proxy) forward(client net.Conn) {
	defer p.wg.Done()
	defer p.untrack(client)
	server, err := net.Dial(p.network, p.target)
	if err != nil {
		return
	}
	if !p.track(server) {
		server.Close()
		return
	}
	defer p.untrack(server)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		// One direction ended: end both, as a cut or a closed peer would.
		dst.Close()
		src.Close()
		done <- struct{}{}
	}
	go pipe(server, client)
	go pipe(client, server)
	<-done
	<-done
}
