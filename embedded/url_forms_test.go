package embedded_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/tenure-dev/tenure/embedded"
)

// TestURLForms: for every part of a URL that net/url drops or normalises
// when it parses, Validate either refuses a listen or advertise URL or
// accepts it with exactly the host:port written, which is the one the
// member listens on or advertises (url.URL.Host).
func TestURLForms(t *testing.T) {
	tests := []struct {
		name, url         string
		listen, advertise string // the host:port used; "" means refused
	}{
		{"plain", "http://127.0.0.1:2379", "127.0.0.1:2379", "127.0.0.1:2379"},
		{"path /", "http://127.0.0.1:2379/", "127.0.0.1:2379", "127.0.0.1:2379"},
		{"path /v3", "http://127.0.0.1:2379/v3", "", ""},
		{"empty fragment", "http://127.0.0.1:2379#", "", ""},
		{"empty fragment after /", "http://127.0.0.1:2379/#", "", ""},
		{"fragment", "http://127.0.0.1:2379#x", "", ""},
		{"empty query", "http://127.0.0.1:2379?", "", ""},
		{"query", "http://127.0.0.1:2379?a=b", "", ""},
		{"empty userinfo", "http://@127.0.0.1:2379", "", ""},
		{"user and empty password", "http://user:@127.0.0.1:2379", "", ""},
		{"upper-case scheme", "HTTP://127.0.0.1:2379", "", ""},
		{"mixed-case scheme", "hTtp://127.0.0.1:2379", "", ""},
		{"name", "http://etcd.internal:2379", "", "etcd.internal:2379"},
		{"localhost", "http://localhost:2379", "localhost:2379", "localhost:2379"},
		{"trailing dot", "http://etcd.internal.:2379", "", "etcd.internal.:2379"},
		{"percent-encoded ASCII host", "http://%31%32%37.0.0.1:2379", "", ""},
		{"percent-encoded non-ASCII host", "http://%C3%A9tcd:2379", "", ""},
		{"percent-encoded percent in host", "http://a%25b:2379", "", ""},
		{"port with leading 0", "http://127.0.0.1:02379", "", ""},
		{"port with +", "http://127.0.0.1:+2379", "", ""},
		{"port 0 (any)", "http://127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"},
		{"port too large", "http://127.0.0.1:65536", "", ""},
		{"IPv6", "http://[::1]:2379", "[::1]:2379", "[::1]:2379"},
		{"IPv6 zone %25", "http://[fe80::1%25lo]:2379", "", ""},
		{"no port (default port)", "http://127.0.0.1", "", ""},
		{"empty port", "http://127.0.0.1:", "", ""},
		{"leading space", " http://127.0.0.1:2379", "", ""},
		{"trailing space", "http://127.0.0.1:2379 ", "", ""},
		{"space in host", "http://127.0.0.1 :2379", "", ""},
		{"newline", "http://127.0.0.1:2379\n", "", ""},
		{"three slashes", "http:///127.0.0.1:2379", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, c := range []struct {
				field string
				cfg   embedded.Config
				want  string
			}{
				{"ClientURLs", embedded.Config{Dir: "d", ClientURLs: []string{tc.url}}, tc.listen},
				{"AdvertiseClientURLs", embedded.Config{Dir: "d", AdvertiseClientURLs: []string{tc.url}}, tc.advertise},
			} {
				err := c.cfg.Validate()
				refused := err != nil && strings.Contains(err.Error(), "Config."+c.field)
				var used string
				if u, perr := url.Parse(tc.url); perr == nil {
					used = u.Host
				}
				switch {
				case c.want == "" && !refused:
					t.Errorf("Config.%s %q accepted (Validate() = %v; the member uses %q); want it refused", c.field, tc.url, err, used)
				case c.want != "" && err != nil:
					t.Errorf("Config.%s %q: Validate() = %v; want it accepted", c.field, tc.url, err)
				case c.want != "" && used != c.want:
					t.Errorf("Config.%s %q accepted; the member uses %q, want %q", c.field, tc.url, used, c.want)
				}
			}
		})
	}
}
