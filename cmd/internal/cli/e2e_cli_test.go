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

// TestExitCodesBinary: the documented exit codes, on the built binary.
func TestExitCodesBinary(t *testing.T) {
	t.Parallel()
	nowhere := "http://" + closedPort(t)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown command", []string{"bogus"}, ExitUsage, `unknown command "bogus"`},
		{"unknown command after a flag", []string{"--endpoints", nowhere, "bogus"}, ExitUsage, `unknown command "bogus"`},
		{"unknown flag", []string{"status", "--bogus"}, ExitUsage, "--bogus"},
		{"unknown root flag", []string{"--bogus", "status"}, ExitUsage, "--bogus"},
		{"extra argument", []string{"status", "--key", "k", "extra"}, ExitUsage, "extra"},
		{"version with an argument", []string{"version", "extra"}, ExitUsage, "extra"},
		{"version", []string{"version"}, ExitOK, "tenure "},
		{"--version", []string{"--version"}, ExitOK, "tenure "},
		{"help", []string{"--help"}, ExitOK, "Exit codes"},
		{"help command", []string{"help", "status"}, ExitOK, "--exit-code"},
		{"completion", []string{"completion", "bash"}, ExitOK, "bash completion"},
		{"shell completion request", []string{"__complete", "st"}, ExitOK, "status"},
		{"a directory as the command", []string{"--endpoints", nowhere, "run", "--key", "k", "--", "/tmp"}, ExitCannotRun, "is a directory"},
		{"a missing command", []string{"--endpoints", nowhere, "run", "--key", "k", "--", "no-such-command-tenure-e2e"}, ExitNotFound, "no-such-command-tenure-e2e"},
		{"a missing path", []string{"--endpoints", nowhere, "run", "--key", "k", "--", "/nonexistent/cmd"}, ExitNotFound, "/nonexistent/cmd"},
		{"server with --postgres", []string{"server", "--postgres", "postgres://h/db", "--http", ""}, ExitUsage, "tenure server does not use --postgres"},
		{"server with --endpoints", []string{"--endpoints", nowhere, "server", "--http", ""}, ExitUsage, "tenure server does not use --endpoints"},
		{"demo with --endpoints", []string{"demo", "--endpoints", nowhere}, ExitUsage, "tenure demo does not use --endpoints"},
		{"demo with --user", []string{"demo", "--user", "root"}, ExitUsage, "tenure demo does not use --user"},
		{"lease check with --postgres", []string{"lease", "check", "--postgres", "postgres://h/db"}, ExitUsage, "tenure lease check does not use --postgres"},
		{"version with --endpoints", []string{"version", "--endpoints", nowhere}, ExitUsage, "does not use --endpoints"},
		{"release without --key", []string{"--endpoints", nowhere, "release", "--force"}, ExitUsage, "--key is required"},
		{"release with --token and --force", []string{"--endpoints", nowhere, "release", "--key", "k", "--token", "3", "--force"}, ExitUsage, "not both"},
		{"watch without --key or --prefix", []string{"--endpoints", nowhere, "watch"}, ExitUsage, "exactly one of --key and --prefix"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := e2e.RunTenure(t, nil, tc.args...)
			if res.Code != tc.code {
				t.Fatalf("%s: exit %d; want %d\nstdout: %s\nstderr: %s", res.Description, res.Code, tc.code, res.Stdout, res.Stderr)
			}
			if !strings.Contains(res.Stdout+res.Stderr, tc.want) {
				t.Errorf("%s: output %q; want it to mention %q", res.Description, res.Stdout+res.Stderr, tc.want)
			}
		})
	}
	// An environment twin of a flag a command does not use is not an
	// error: one environment often serves several commands.
	res := e2e.RunTenure(t, []string{"TENURE_ENDPOINTS=" + nowhere, "TENURE_POSTGRES=mysql://x"}, "version")
	if res.Code != 0 {
		t.Errorf("TENURE_ENDPOINTS, TENURE_POSTGRES tenure version: exit %d; want 0\n%s", res.Code, res.Stderr)
	}
}

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

// TestErrorsSayWhatToDo: errors name the flag typed, say the fix, carry
// one "tenure:" prefix and no library field names, cut long inputs, and
// come before anything is dialled.
func TestErrorsSayWhatToDo(t *testing.T) {
	t.Parallel()
	nowhere := []string{"--endpoints", "http://" + closedPort(t)}
	long := strings.Repeat("k", 10000)
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"ttl too short for the default margin", []string{"run", "--key", "k", "--ttl", "1s", "--", "true"},
			[]string{"--ttl 1s is too short for --margin 1s (the default) and --max-drift 1% (the default): use --ttl 2s or more"}},
		{"ttl too short for a margin given", []string{"run", "--key", "k", "--ttl", "5s", "--margin", "3s", "--max-drift", "0.2", "--", "true"},
			[]string{"--ttl 5s is too short for --margin 3s and --max-drift 20%: use --ttl 7s or more, or a smaller --margin"}},
		{"ttl 1.5s", []string{"run", "--key", "k", "--ttl", "1500ms", "--", "true"},
			[]string{"use --ttl 2s or more"}},
		{"zero ttl", []string{"run", "--key", "k", "--ttl", "0s", "--", "true"}, []string{"--ttl 0s: must be positive"}},
		{"endpoint without ://", []string{"--endpoints", "http//127.0.0.1:2379", "status", "--key", "k"},
			[]string{`--endpoints "http//127.0.0.1:2379" is not a URL: use http://127.0.0.1:2379`}},
		{"endpoint with one slash", []string{"--endpoints", "https:/10.0.0.1:2379", "status", "--key", "k"},
			[]string{"use https://10.0.0.1:2379"}},
		{"endpoint of another scheme", []string{"--endpoints", "ftp://x:1", "status", "--key", "k"}, []string{"--endpoints", `"ftp://x:1"`, "want http or https"}},
		{"MySQL DSN", []string{"--postgres", "mysql://root:hunter2@db/app", "status", "--key", "k"},
			[]string{`"mysql" is not PostgreSQL: use postgres://`}},
		{"long key", []string{"status", "--key", long + " "}, []string{"(10001 bytes)"}},
		{"long holder", []string{"run", "--key", "k", "--holder", long + "\t", "--", "true"}, []string{"--holder", "(10001 bytes)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if args[0] == "run" || args[0] == "status" {
				args = append(append([]string{}, nowhere...), args...)
			}
			res := e2e.RunTenure(t, nil, args...)
			if res.Code != ExitUsage {
				t.Fatalf("%s: exit %d; want %d\n%s", res.Description, res.Code, ExitUsage, res.Stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(res.Stderr, w) {
					t.Errorf("%s:\nstderr %q\nwant it to say %q", shorten(res.Description), res.Stderr, w)
				}
			}
			if n := strings.Count(res.Stderr, "tenure:"); n != 1 || !strings.HasPrefix(res.Stderr, "tenure: ") {
				t.Errorf("stderr %q has %d \"tenure:\" prefixes; want one, first", res.Stderr, n)
			}
			for _, bad := range []string{"Config.", "hunter2", "TTL·"} {
				if strings.Contains(res.Stderr, bad) {
					t.Errorf("stderr %q shows %q", res.Stderr, bad)
				}
			}
			if len(res.Stderr) > 400 {
				t.Errorf("stderr is %d bytes long; want long inputs cut", len(res.Stderr))
			}
		})
	}
}

// shorten cuts s for a failure message.
func shorten(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
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
	refused := "http://" + closedPort(t)
	cause := fmt.Errorf("etcd: unreachable")
	if got := serverHint(cause, []string{refused}, refused).Error(); !strings.Contains(got, `is "tenure server" running?`) {
		t.Errorf("serverHint(refused default) = %q; want the advice", got)
	}
	if got := serverHint(cause, []string{refused}, "http://127.0.0.1:1"); got != cause {
		t.Errorf("serverHint(not the default) = %q; want the error unchanged", got)
	}
	open := "http://" + blackHole(t)
	if got := serverHint(cause, []string{open}, open); got != cause {
		t.Errorf("serverHint(something listens) = %q; want the error unchanged", got)
	}
}

// TestHTTPSToPlainServer: https:// to a server without TLS says to use
// http://, not just "EOF".
func TestHTTPSToPlainServer(t *testing.T) {
	t.Parallel()
	s := e2e.StartServer(t, t.TempDir())
	https := strings.Replace(s.Endpoint, "http://", "https://", 1)
	res := e2e.RunTenure(t, nil, "--endpoints", https, "--dial-timeout", "2s", "status", "--key", "k")
	if want := "use --endpoints " + s.Endpoint; res.Code != ExitUnavailable || !strings.Contains(res.Stderr, want) {
		t.Errorf("%s: exit %d, stderr %q; want %d and %q", res.Description, res.Code, res.Stderr, ExitUnavailable, want)
	}
	res = e2e.RunTenure(t, nil, "--endpoints", s.Endpoint, "status", "--key", "k")
	if res.Code != 0 {
		t.Errorf("%s: exit %d; want 0 (the advice works)\n%s", res.Description, res.Code, res.Stderr)
	}
}
