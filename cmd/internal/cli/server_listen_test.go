package cli

import (
	"strings"
	"testing"
)

// TestCheckListenSecure: a client or peer URL beyond loopback is refused
// unless it is https:// with client certificates required, or
// --insecure-listen is given; the error names the URL, the TLS flags and
// --insecure-listen.
func TestCheckListenSecure(t *testing.T) {
	loop := []string{"http://127.0.0.1:2380"}
	for _, tc := range []struct {
		name string
		f    serverFlags
		want string // "" accepted, else a part of the error
	}{
		{"defaults", serverFlags{listenClient: []string{"http://127.0.0.1:2379"}, listenPeer: loop}, ""},
		{"localhost and ::1", serverFlags{listenClient: []string{"http://localhost:2379", "http://[::1]:2379"}, listenPeer: loop}, ""},
		{"every address, plain", serverFlags{listenClient: []string{"http://0.0.0.0:2379"}, listenPeer: loop}, "--listen-client http://0.0.0.0:2379"},
		{"an interface, plain", serverFlags{listenClient: []string{"http://127.0.0.1:2379", "http://10.0.0.1:2379"}, listenPeer: loop}, "--listen-client http://10.0.0.1:2379"},
		{"TLS without client certificates", serverFlags{listenClient: []string{"https://0.0.0.0:2379"}, listenPeer: loop, serverTLSCert: "c", serverTLSKey: "k"}, "--server-tls-ca"},
		{"TLS with client certificates", serverFlags{listenClient: []string{"https://0.0.0.0:2379"}, listenPeer: loop, serverTLSCert: "c", serverTLSKey: "k", serverTLSCA: "ca"}, ""},
		{"peer, plain", serverFlags{listenClient: []string{"http://127.0.0.1:2379"}, listenPeer: []string{"http://[::]:2380"}}, "--listen-peer http://[::]:2380"},
		{"peer, TLS with client certificates", serverFlags{listenClient: []string{"http://127.0.0.1:2379"}, listenPeer: []string{"https://10.0.0.1:2380"}, peerTLSCA: "ca"}, ""},
		{"insecure, asked for", serverFlags{listenClient: []string{"http://0.0.0.0:2379"}, listenPeer: []string{"http://0.0.0.0:2380"}, insecureListen: true}, ""},
	} {
		err := checkListenSecure(&tc.f)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v; want accepted", tc.name, err)
		case tc.want != "" && err == nil:
			t.Errorf("%s: accepted; want refused naming %q", tc.name, tc.want)
		case tc.want != "" && (!strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--insecure-listen")):
			t.Errorf("%s: %v; want it to name %q and --insecure-listen", tc.name, err, tc.want)
		}
	}
}
