package etcd

import (
	"bytes"
	"cmp"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/partition"
)

// FuzzRegisterToken: a register's stored token reads back as the token
// written, only the fixed-width form is read, and two stored tokens
// compare as bytes (as etcd compares them) in the order of the tokens.
func FuzzRegisterToken(f *testing.F) {
	f.Add(uint64(42), []byte("00000000000000000042"), []byte("00000000000000000100"))
	f.Add(uint64(1<<64-1), []byte("18446744073709551615"), []byte("18446744073709551616"))
	f.Add(uint64(0), []byte("42"), []byte("+0000000000000000042"))
	f.Fuzz(func(t *testing.T, tok uint64, a, b []byte) {
		s := formatToken(tok)
		if got, err := parseToken([]byte(s)); err != nil || got != tok || len(s) != tokenWidth {
			t.Fatalf("parseToken(formatToken(%d) = %q) = %d, %v", tok, s, got, err)
		}
		ta, erra := parseToken(a)
		tb, errb := parseToken(b)
		if erra == nil && formatToken(ta) != string(a) {
			t.Fatalf("parseToken read %d from %q, which formatToken writes %q", ta, a, formatToken(ta))
		}
		if erra == nil && errb == nil && bytes.Compare(a, b) != cmp.Compare(ta, tb) {
			t.Fatalf("stored tokens %q and %q compare as bytes unlike %d and %d", a, b, ta, tb)
		}
	})
}

// FuzzMemberValue: a membership key's value reads back as the whole
// seconds of TTL and the partition count written, and any value reads
// without panicking.
func FuzzMemberValue(f *testing.F) {
	f.Add(int64(10*time.Second), 8, "10 8")
	f.Add(int64(1500*time.Millisecond), 0, "1")
	f.Add(int64(0), -1, "x y z")
	f.Fuzz(func(t *testing.T, ttl int64, partitions int, raw string) {
		_, _ = parseMemberValue(raw)
		if ttl < 0 || partitions < 0 {
			return
		}
		m := partition.Member{TTL: time.Duration(ttl), Partitions: partitions}
		gotTTL, gotP := parseMemberValue(memberValue(m))
		if gotTTL != m.TTL.Truncate(time.Second) || gotP != partitions {
			t.Fatalf("member value %q of TTL %s, %d partitions reads as %s, %d", memberValue(m), m.TTL, partitions, gotTTL, gotP)
		}
	})
}

// FuzzCheckEndpoint: an endpoint checkEndpoint accepts is host:port or
// http(s)://host:port (with at most a "/" path), dialed as written, with
// a host and a port from 1 to 65535 in decimal without leading zeros, and
// nothing else the client would drop, decode or misread.
func FuzzCheckEndpoint(f *testing.F) {
	for _, s := range []string{"127.0.0.1:2379", "http://127.0.0.1:2379", "https://etcd.internal:2379/", "[::1]:2379", "http://[::1]:2379",
		"unix:///tmp/etcd.sock", "localhost", "http://h:0", "http://h:65536", "h:0x10", "http://h:2379/v3", "ftp://h:1", ":2379", "a/b:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ep string) {
		if checkEndpoint(ep) != nil {
			return
		}
		hostport := ep
		if strings.Contains(ep, "://") {
			u, err := url.Parse(ep)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || (u.Path != "" && u.Path != "/") {
				t.Fatalf("checkEndpoint accepted %q: %+v, %v", ep, u, err)
			}
			if u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" || u.ForceQuery {
				t.Fatalf("checkEndpoint accepted %q, which has more than scheme://host:port", ep)
			}
			if want := u.Scheme + "://" + u.Host; strings.TrimSuffix(ep, "/") != want {
				t.Fatalf("checkEndpoint accepted %q, not of the form %q", ep, want)
			}
			hostport = u.Host
		}
		host, port, err := net.SplitHostPort(hostport)
		n, perr := strconv.Atoi(port)
		if err != nil || host == "" || perr != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
			t.Fatalf("checkEndpoint accepted %q: host %q, port %q (%v)", ep, host, port, err)
		}
		if !strings.HasPrefix(hostport, "[") && strings.ContainsFunc(host, func(r rune) bool {
			return r <= ' ' || r >= 0x7f || strings.ContainsRune(`%@?#/\[]`, r)
		}) {
			t.Fatalf("checkEndpoint accepted %q: host %q is not dialed as a name or address", ep, host)
		}
		if a, err := netip.ParseAddr(host); strings.HasPrefix(hostport, "[") && (err != nil || !a.Is6()) {
			t.Fatalf("checkEndpoint accepted %q: [%s] is not an IPv6 address", ep, host)
		}
	})
}
