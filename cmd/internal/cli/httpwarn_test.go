package cli

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestLoopbackAddr: only a loopback host reaches this machine alone;
// every address (an empty host, 0.0.0.0, ::), a name other than
// localhost and a routable IP may be reached from elsewhere.
func TestLoopbackAddr(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{
		"127.0.0.1:9480": true, "127.0.0.2:9480": true, "localhost:9480": true, "[::1]:9480": true,
		":9480": false, "0.0.0.0:9480": false, "[::]:9480": false, "192.168.1.10:9480": false,
		"[fe80::1]:9480": false, "worker-1:9480": false, "9480": false,
	} {
		if got := loopbackAddr(addr); got != want {
			t.Errorf("loopbackAddr(%q) = %t; want %t", addr, got, want)
		}
	}
}

// TestWarnPlainHTTP: plain HTTP beyond loopback is warned about once,
// naming the address and --http-config; on loopback, or with
// --http-config, nothing is said.
func TestWarnPlainHTTP(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addr, config string
		warn         bool
	}{
		{"0.0.0.0:9480", "", true},
		{"[::]:9480", "", true},
		{"10.0.0.7:9480", "", true},
		{"0.0.0.0:9480", "/etc/tenure/web.yml", false},
		{"127.0.0.1:9480", "", false},
		{"[::1]:9480", "", false},
	} {
		var buf bytes.Buffer
		warnPlainHTTP(slog.New(slog.NewTextHandler(&buf, nil)), tc.addr, tc.config)
		out := buf.String()
		got := strings.Count(out, "level=WARN")
		if !tc.warn && got != 0 {
			t.Errorf("--http %s --http-config %q: logged %q; want nothing", tc.addr, tc.config, out)
		}
		if tc.warn && (got != 1 || !strings.Contains(out, "http="+tc.addr) || !strings.Contains(out, "--http-config") ||
			!strings.Contains(out, "unauthenticated and unencrypted")) {
			t.Errorf("--http %s: logged %q; want one warning naming the address, unauthenticated and unencrypted, and --http-config", tc.addr, out)
		}
	}
}
