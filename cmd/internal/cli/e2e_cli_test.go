package cli

import (
	"encoding/json"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/e2e"
	"github.com/tenure-dev/tenure/internal/timing"
)

// TestHelpSections: every command's help lists the environment twin of
// each flag it shows and its exit codes, shows only the coordinator flags
// it uses, and writes boolean flags as users type them.
func TestHelpSections(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cmd    []string
		shows  []string // flags whose twin must be listed
		hidden []string // coordinator flags it must not show
		codes  []string
	}{
		{[]string{"server"}, []string{"data-dir", "listen-client", "start-timeout", "log-level"}, []string{"endpoints", "postgres", "user", "dial-timeout"}, []string{"0 ", "2 ", "70 "}},
		{[]string{"run"}, []string{"key", "ttl", "kill-grace", "endpoints", "postgres", "password"}, nil, []string{"69 ", "70 ", "126", "127"}},
		{[]string{"status"}, []string{"key", "prefix", "exit-code", "endpoints"}, nil, []string{"4 "}},
		{[]string{"watch"}, []string{"key", "prefix", "json", "endpoints"}, nil, []string{"0 ", "2 ", "69 ", "70 "}},
		{[]string{"release"}, []string{"key", "token", "force", "postgres"}, nil, []string{"refused"}},
		{[]string{"demo"}, []string{"backend", "nodes", "postgres", "dial-timeout"}, []string{"endpoints", "user", "tls-ca"}, []string{"0 ", "2 "}},
		{[]string{"lease", "check"}, []string{"lease-file", "json"}, []string{"endpoints", "postgres"}, []string{"0 ", "1 "}},
		{[]string{"version"}, []string{"json"}, []string{"endpoints", "postgres"}, []string{"0 "}},
		{nil, nil, nil, []string{"126", "127"}},
	} {
		name := strings.Join(tc.cmd, " ")
		t.Run(name, func(t *testing.T) {
			res := e2e.RunTenure(t, nil, append(tc.cmd, "--help")...)
			if res.Code != 0 {
				t.Fatalf("%s: exit %d\n%s", res.Description, res.Code, res.Stderr)
			}
			out := res.Stdout
			if len(tc.cmd) > 0 && !strings.Contains(out, "\nEnvironment") {
				t.Errorf("%s has no Environment section:\n%s", res.Description, out)
			}
			codes := out[strings.LastIndex(out, "Exit codes:")+1:]
			if !strings.Contains(out, "Exit codes:") {
				t.Errorf("%s has no Exit codes section:\n%s", res.Description, out)
			}
			for _, c := range tc.codes {
				if !strings.Contains(codes, "  "+c) {
					t.Errorf("%s: exit codes do not list %q:\n%s", res.Description, c, codes)
				}
			}
			for _, f := range tc.shows {
				if !strings.Contains(out, envName(f)+" ") || !strings.Contains(out, "--"+f) {
					t.Errorf("%s does not show --%s with its twin %s", res.Description, f, envName(f))
				}
			}
			for _, f := range tc.hidden {
				if regexp.MustCompile(`(?m)^\s+--`+f+`\s`).MatchString(out) || strings.Contains(out, envName(f)) {
					t.Errorf("%s shows --%s, which the command does not use", res.Description, f)
				}
			}
			if strings.Contains(out, "[=true|false]") {
				t.Errorf("%s writes a boolean flag as --flag[=true|false]", res.Description)
			}
		})
	}
}

// TestVersionBinary: tenure version and --version name the module
// version and the Go version the binary was built with; --json has the
// same fields.
func TestVersionBinary(t *testing.T) {
	t.Parallel()
	text := e2e.RunTenure(t, nil, "version")
	flag := e2e.RunTenure(t, nil, "--version")
	if text.Stdout != flag.Stdout || !strings.HasPrefix(text.Stdout, "tenure ") || !strings.Contains(text.Stdout, runtime.Version()) {
		t.Errorf("tenure version = %q, --version = %q; want the same line, naming %s", text.Stdout, flag.Stdout, runtime.Version())
	}
	res := e2e.RunTenure(t, nil, "version", "--json")
	var v versionInfo
	if err := json.Unmarshal([]byte(res.Stdout), &v); err != nil {
		t.Fatalf("version --json = %q: %v", res.Stdout, err)
	}
	if v.Version == "" || v.Go != runtime.Version() || v.Platform != runtime.GOOS+"/"+runtime.GOARCH {
		t.Errorf("version --json = %+v; want a version, Go %s on %s/%s", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	}
	if want := fmt.Sprintf("tenure %s\n", v); text.Stdout != want {
		t.Errorf("tenure version = %q; want %q, the text form of --json", text.Stdout, want)
	}
}

// TestSmallestTTL: the TTL named in the advice is valid, and 1s (or
// 100ms) less is not.
func TestSmallestTTL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		margin time.Duration
		drift  float64
		want   time.Duration
	}{
		{time.Second, 0.01, 2 * time.Second},
		{3 * time.Second, 0.2, 7 * time.Second},
		{timing.MinMargin, 0.01, 100 * time.Millisecond},
		{200 * time.Millisecond, 0, 400 * time.Millisecond},
		{10 * time.Second, 0.01, 16 * time.Second},
	} {
		got, ok := smallestTTL(tc.margin, tc.drift)
		if !ok || got != tc.want {
			t.Errorf("smallestTTL(%s, %v) = %s, %t; want %s", tc.margin, tc.drift, got, ok, tc.want)
		}
		step := time.Second
		if got <= time.Second {
			step = 100 * time.Millisecond
		}
		if !timingValid(got, tc.margin, tc.drift) || timingValid(got-step, tc.margin, tc.drift) {
			t.Errorf("smallestTTL(%s, %v) = %s: valid %t, %s less valid %t; want the least valid",
				tc.margin, tc.drift, got, timingValid(got, tc.margin, tc.drift), step, timingValid(got-step, tc.margin, tc.drift))
		}
	}
	// A margin below timing.MinMargin is invalid at every TTL: no advice.
	if got, ok := smallestTTL(0, 0.01); ok {
		t.Errorf("smallestTTL(0s, 0.01) = %s, true; want none (margin below %s)", got, timing.MinMargin)
	}
}

// TestServerHint: a refused default endpoint gets the advice to start
// tenure server; other endpoints and other failures do not.
func TestServerHint(t *testing.T) {
	t.Parallel()
	refused := "http://" + e2e.ClosedPort(t)
	cause := fmt.Errorf("etcd: unreachable")
	if got := serverHint(cause, []string{refused}, refused).Error(); !strings.Contains(got, `is "tenure server" running?`) {
		t.Errorf("serverHint(refused default) = %q; want the advice", got)
	}
	if got := serverHint(cause, []string{refused}, "http://127.0.0.1:1"); got != cause {
		t.Errorf("serverHint(not the default) = %q; want the error unchanged", got)
	}
	open := "http://" + e2e.BlackHole(t)
	if got := serverHint(cause, []string{open}, open); got != cause {
		t.Errorf("serverHint(something listens) = %q; want the error unchanged", got)
	}
}
