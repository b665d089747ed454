package input

import (
	"strings"
	"testing"

	"github.com/tenure-dev/tenure/cmd/internal/cli"
	"github.com/tenure-dev/tenure/cmd/internal/e2e"
)

// TestExitCodesBinary: the documented exit codes, on the built binary.
func TestExitCodesBinary(t *testing.T) {
	t.Parallel()
	nowhere := "http://" + e2e.ClosedPort(t)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown command", []string{"bogus"}, cli.ExitUsage, `unknown command "bogus"`},
		{"unknown command after a flag", []string{"--endpoints", nowhere, "bogus"}, cli.ExitUsage, `unknown command "bogus"`},
		{"unknown flag", []string{"status", "--bogus"}, cli.ExitUsage, "--bogus"},
		{"unknown root flag", []string{"--bogus", "status"}, cli.ExitUsage, "--bogus"},
		{"extra argument", []string{"status", "--key", "k", "extra"}, cli.ExitUsage, "extra"},
		{"version with an argument", []string{"version", "extra"}, cli.ExitUsage, "extra"},
		{"version", []string{"version"}, cli.ExitOK, "tenure "},
		{"--version", []string{"--version"}, cli.ExitOK, "tenure "},
		{"help", []string{"--help"}, cli.ExitOK, "Exit codes"},
		{"help command", []string{"help", "status"}, cli.ExitOK, "--exit-code"},
		{"completion", []string{"completion", "bash"}, cli.ExitOK, "bash completion"},
		{"shell completion request", []string{"__complete", "st"}, cli.ExitOK, "status"},
		{"a directory as the command", []string{"--endpoints", nowhere, "run", "--key", "k", "--", "/tmp"}, cli.ExitCannotRun, "is a directory"},
		{"a missing command", []string{"--endpoints", nowhere, "run", "--key", "k", "--", "no-such-command-tenure-e2e"}, cli.ExitNotFound, "no-such-command-tenure-e2e"},
		{"a missing path", []string{"--endpoints", nowhere, "run", "--key", "k", "--", "/nonexistent/cmd"}, cli.ExitNotFound, "/nonexistent/cmd"},
		{"server with --postgres", []string{"server", "--postgres", "postgres://h/db", "--http", ""}, cli.ExitUsage, "tenure server does not use --postgres"},
		{"server with --endpoints", []string{"--endpoints", nowhere, "server", "--http", ""}, cli.ExitUsage, "tenure server does not use --endpoints"},
		{"demo with --endpoints", []string{"demo", "--endpoints", nowhere}, cli.ExitUsage, "tenure demo does not use --endpoints"},
		{"demo with --user", []string{"demo", "--user", "root"}, cli.ExitUsage, "tenure demo does not use --user"},
		{"lease check with --postgres", []string{"lease", "check", "--postgres", "postgres://h/db"}, cli.ExitUsage, "tenure lease check does not use --postgres"},
		{"version with --endpoints", []string{"version", "--endpoints", nowhere}, cli.ExitUsage, "does not use --endpoints"},
		{"release without --key", []string{"--endpoints", nowhere, "release", "--force"}, cli.ExitUsage, "--key is required"},
		{"release with --token and --force", []string{"--endpoints", nowhere, "release", "--key", "k", "--token", "3", "--force"}, cli.ExitUsage, "not both"},
		{"watch without --key or --prefix", []string{"--endpoints", nowhere, "watch"}, cli.ExitUsage, "exactly one of --key and --prefix"},
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

// TestErrorsSayWhatToDo: errors name the flag typed, say the fix, carry
// one "tenure:" prefix and no library field names, cut long inputs, and
// come before anything is dialled.
func TestErrorsSayWhatToDo(t *testing.T) {
	t.Parallel()
	nowhere := []string{"--endpoints", "http://" + e2e.ClosedPort(t)}
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
			if res.Code != cli.ExitUsage {
				t.Fatalf("%s: exit %d; want %d\n%s", res.Description, res.Code, cli.ExitUsage, res.Stderr)
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

// TestHTTPSToPlainServer: https:// to a server without TLS says to use
// http://, not just "EOF".
func TestHTTPSToPlainServer(t *testing.T) {
	t.Parallel()
	s := e2e.StartServer(t, t.TempDir())
	https := strings.Replace(s.Endpoint, "http://", "https://", 1)
	res := e2e.RunTenure(t, nil, "--endpoints", https, "--dial-timeout", "2s", "status", "--key", "k")
	if want := "use --endpoints " + s.Endpoint; res.Code != cli.ExitUnavailable || !strings.Contains(res.Stderr, want) {
		t.Errorf("%s: exit %d, stderr %q; want %d and %q", res.Description, res.Code, res.Stderr, cli.ExitUnavailable, want)
	}
	res = e2e.RunTenure(t, nil, "--endpoints", s.Endpoint, "status", "--key", "k")
	if res.Code != 0 {
		t.Errorf("%s: exit %d; want 0 (the advice works)\n%s", res.Description, res.Code, res.Stderr)
	}
}
