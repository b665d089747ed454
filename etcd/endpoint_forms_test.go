package etcd

import (
	"net/url"
	"strings"
	"testing"
)

// clientAddress is the address etcd's client dials for ep: the host of an
// http(s) URL as net/url reads it (percent-decoded, without its path,
// query or fragment), anything else as written (client/v3's
// internal/endpoint.Interpret).
func clientAddress(ep string) string {
	if strings.Contains(ep, "://") {
		if u, err := url.Parse(ep); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
			return u.Host
		}
	}
	return ep
}

// TestCheckEndpointForms: for every part of a URL that net/url drops or
// normalises when it parses, checkEndpoint either refuses the endpoint or
// accepts it with exactly the address the user wrote, which is the address
// etcd's client dials.
func TestCheckEndpointForms(t *testing.T) {
	tests := []struct {
		name, ep string
		want     string // the address dialed; "" means refused
	}{
		{"host:port", "127.0.0.1:2379", "127.0.0.1:2379"},
		{"http", "http://127.0.0.1:2379", "127.0.0.1:2379"},
		{"https name", "https://etcd.internal:2379", "etcd.internal:2379"},
		{"path /", "http://127.0.0.1:2379/", "127.0.0.1:2379"},
		{"path //", "http://127.0.0.1:2379//", ""},
		{"path /v3", "http://127.0.0.1:2379/v3", ""},
		{"host:port with /", "127.0.0.1:2379/", ""},
		{"empty fragment", "http://0:1#", ""},
		{"empty fragment after /", "http://0:1/#", ""},
		{"fragment", "http://h:2379#f", ""},
		{"empty query", "http://h:1?", ""},
		{"empty query after /", "http://h:1/?", ""},
		{"query", "http://h:1?a=b", ""},
		{"empty userinfo", "http://@h:1", ""},
		{"user and empty password", "http://user:@h:1", ""},
		{"empty user and password", "http://:@h:1", ""},
		{"user and password", "http://u:p@h:1", ""},
		{"userinfo in host:port", "u@h:1", ""},
		{"empty userinfo in host:port", "@h:1", ""},
		{"upper-case scheme", "HTTP://h:1", ""},
		{"mixed-case scheme", "hTtp://0:1", ""},
		{"upper-case https", "HTTPS://h:1", ""},
		{"upper-case host", "http://ETCD.internal:2379", "ETCD.internal:2379"},
		{"percent-encoded ASCII host", "http://%65tcd:2379", ""},
		{"percent-encoded non-ASCII host", "http://%C3%A9tcd:2379", ""},
		{"percent-encoded percent in host", "http://a%25b:1", ""},
		{"percent in host:port", "%65tcd:2379", ""},
		{"non-ASCII host", "http://étcd:2379", ""},
		{"trailing dot", "http://etcd.internal.:2379", "etcd.internal.:2379"},
		{"trailing dot in host:port", "etcd.internal.:2379", "etcd.internal.:2379"},
		{"port with leading 0", "http://h:02379", ""},
		{"port with leading 0 in host:port", "h:02379", ""},
		{"port 0", "h:0", ""},
		{"port 00", "http://h:00", ""},
		{"port with +", "h:+1", ""},
		{"port with + in URL", "http://h:+1", ""},
		{"port with -", "h:-1", ""},
		{"port in hex", "h:0x10", ""},
		{"largest port", "http://h:65535", "h:65535"},
		{"port too large", "http://h:65536", ""},
		{"IPv6", "http://[::1]:2379", "[::1]:2379"},
		{"IPv6 in host:port", "[::1]:2379", "[::1]:2379"},
		{"IPv6 without brackets", "::1:2379", ""},
		{"IPv6 zone %25 in URL", "http://[fe80::1%25eth0]:2379", ""},
		{"IPv6 zone in host:port", "[fe80::1%eth0]:2379", "[fe80::1%eth0]:2379"},
		{"IPv6 zone not escaped in URL", "http://[fe80::1%eth0]:2379", ""},
		{"IPv6 zone with a space", "[fe80::1%eth 0]:2379", ""},
		{"IPv4 in brackets", "http://[127.0.0.1]:2379", ""},
		{"IPv4 in brackets in host:port", "[127.0.0.1]:2379", ""},
		{"name in brackets", "[localhost]:2379", ""},
		{"no port (default port)", "http://h", ""},
		{"no https port (default port)", "https://h", ""},
		{"empty port", "http://h:", ""},
		{"host alone", "h", ""},
		{"empty host", "http://:1", ""},
		{"empty host in host:port", ":1", ""},
		{"three slashes", "http:///h:1", ""},
		{"leading space", " http://h:1", ""},
		{"trailing space", "http://h:1 ", ""},
		{"space in host", "http://h :1", ""},
		{"leading space in host:port", " h:1", ""},
		{"space in host:port", "h :1", ""},
		{"trailing space in host:port", "h:1 ", ""},
		{"tab in host:port", "h\t:1", ""},
		{"newline", "http://h:1\n", ""},
		{"backslash in host:port", `h\x:1`, ""},
		{"unix socket", "unix:///tmp/etcd.sock", ""},
		{"other scheme", "ftp://h:1", ""},
		{"scheme without //", "http:h:1", ""},
		{"scheme without :", "http//h:1", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := checkEndpoint(tc.ep)
			switch {
			case tc.want == "" && err == nil:
				t.Fatalf("checkEndpoint(%q) accepted it (the client dials %q); want it refused", tc.ep, clientAddress(tc.ep))
			case tc.want != "" && err != nil:
				t.Fatalf("checkEndpoint(%q) = %v; want it accepted", tc.ep, err)
			case tc.want != "" && clientAddress(tc.ep) != tc.want:
				t.Fatalf("checkEndpoint(%q) accepted it; the client dials %q, want %q", tc.ep, clientAddress(tc.ep), tc.want)
			}
		})
	}
}
