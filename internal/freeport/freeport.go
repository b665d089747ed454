// Package freeport finds loopback TCP ports that are free now and unlikely
// to be taken before they are used.
//
// Port 0 asks the kernel for an ephemeral port, from the same range it hands
// to outgoing connections; a server that is stopped and restarted on such a
// port (tests restart etcd members and PostgreSQL) can find it taken by
// someone's outgoing connection in between. freeport picks ports below the
// ephemeral range instead, where only listeners go.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// low is the lowest port handed out.
const low = 20000

// Listen returns n listeners on distinct free loopback ports below the
// kernel's ephemeral range (falling back to port 0 when that range cannot
// be read or leaves no room). The caller closes them, typically right before
// starting the servers that will use the ports.
func Listen(n int) ([]net.Listener, error) {
	hi := ephemeralLow()
	ls := make([]net.Listener, 0, n)
	fail := func(err error) ([]net.Listener, error) {
		for _, l := range ls {
			l.Close()
		}
		return nil, fmt.Errorf("freeport: find a free loopback port: %w", err)
	}
	for len(ls) < n {
		if hi-low < 1000 {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return fail(err)
			}
			ls = append(ls, l)
			continue
		}
		var l net.Listener
		var err error
		for try := 0; try < 100; try++ {
			port := low + rand.IntN(hi-low)
			if l, err = net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
				break
			}
		}
		if err != nil {
			return fail(err)
		}
		ls = append(ls, l)
	}
	return ls, nil
}

// Ports returns n free loopback ports (see Listen).
func Ports(n int) ([]int, error) {
	ls, err := Listen(n)
	if err != nil {
		return nil, err
	}
	ports := make([]int, n)
	for i, l := range ls {
		ports[i] = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	return ports, nil
}

// ephemeralLow is the first port of the kernel's ephemeral range, or 0 when
// it cannot be read (not Linux).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 1 {
		return 0
	}
	p, err := strconv.Atoi(f[0])
	if err != nil {
		return 0
	}
	return p
}

// LocalURLs returns n distinct http:// URLs on 127.0.0.1 on free ports (see
// Ports), for servers started right after.
func LocalURLs(n int) ([]string, error) {
	ports, err := Ports(n)
	if err != nil {
		return nil, err
	}
	out := make([]string, n)
	for i, p := range ports {
		out[i] = fmt.Sprintf("http://127.0.0.1:%d", p)
	}
	return out, nil
}
