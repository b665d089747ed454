package input

import (
	"cmp"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/cli"
	"github.com/tenure-dev/tenure/cmd/internal/e2e"
)

// TestUnreachableCoordinator: an unreachable coordinator is a clear error
// within --dial-timeout; the command never runs.
func TestUnreachableCoordinator(t *testing.T) {
	t.Parallel()
	const dialTimeout = time.Second
	refused, hole := e2e.ClosedPort(t), e2e.BlackHole(t)
	for _, tc := range []struct {
		name string
		args []string
		want []string
		wait time.Duration // the dial timeout (default dialTimeout)
	}{
		// Nothing listens: it fails at once, not after a 30s dial timeout.
		{"etcd refused", []string{"--endpoints", "http://" + refused}, []string{refused, "connection refused"}, 30 * time.Second},
		{"etcd black hole", []string{"--endpoints", "http://" + hole}, []string{hole, "dial timeout"}, 0},
		{"etcd two endpoints", []string{"--endpoints", "http://" + refused + ",http://" + hole}, []string{refused, hole}, 0},
		{"postgres refused", []string{"--postgres", "postgres://tenure:secret@" + refused + "/tenure?sslmode=disable"}, []string{refused, "xxxxx"}, 0},
		{"postgres black hole", []string{"--postgres", "postgres://tenure:secret@" + hole + "/tenure?sslmode=disable"}, []string{hole, "dial-timeout"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each case waits out its dial timeouts
			marker := filepath.Join(t.TempDir(), "ran")
			for _, cmd := range [][]string{
				{"run", "--key", "jobs", "--", "touch", marker},
				{"status", "--key", "jobs"},
				{"watch", "--key", "jobs"},
			} {
				wait := cmp.Or(tc.wait, dialTimeout)
				args := append(append([]string{"--dial-timeout", wait.String()}, tc.args...), cmd...)
				res := e2e.RunTenure(t, nil, args...)
				if res.Code != cli.ExitUnavailable {
					t.Errorf("%s: exit %d; want %d\n%s", res.Description, res.Code, cli.ExitUnavailable, res.Stderr)
				}
				if res.Took > dialTimeout+e2e.Slack {
					t.Errorf("%s took %s; want within %s plus start-up", res.Description, res.Took.Round(time.Millisecond), dialTimeout)
				}
				for _, w := range tc.want {
					if !strings.Contains(res.Stderr, w) {
						t.Errorf("%s: stderr %q does not mention %q", res.Description, res.Stderr, w)
					}
				}
				if strings.Contains(res.Stderr, "secret") {
					t.Errorf("%s: stderr %q shows the password", res.Description, res.Stderr)
				}
			}
			if _, err := os.Stat(marker); err == nil {
				t.Error("the command ran although the coordinator was unreachable")
			}
		})
	}
}

// TestBadInput: malformed flags, environment twins, keys and commands are
// usage errors (exit 2) that name what is wrong, found before anything is
// dialled (the endpoint here does not exist).
func TestBadInput(t *testing.T) {
	t.Parallel()
	nowhere := []string{"--endpoints", "http://" + e2e.ClosedPort(t)}
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"run without a command", nil, []string{"run", "--key", "jobs"}, []string{"needs a command"}},
		{"run without a command after --", nil, []string{"run", "--key", "jobs", "--"}, []string{"needs a command"}},
		{"run without --key", nil, []string{"run", "--", "true"}, []string{"--key is required"}},
		{"key with a leading slash", nil, []string{"run", "--key", "/jobs", "--", "true"}, []string{"--key", `"/jobs"`, "must not start with '/'"}},
		{"key with a space", nil, []string{"status", "--key", "my jobs"}, []string{"--key", `"my jobs"`}},
		{"key with ..", nil, []string{"watch", "--key", "a/../b"}, []string{"--key", `"a/../b"`}},
		{"key too long", nil, []string{"run", "--key", strings.Repeat("k", 201), "--", "true"}, []string{"201 bytes"}},
		{"bad prefix", nil, []string{"status", "--prefix", "/x"}, []string{"--prefix", `"/x"`}},
		{"key and prefix", nil, []string{"status", "--key", "a", "--prefix", "b"}, []string{"exactly one of --key and --prefix"}},
		{"bad holder", nil, []string{"run", "--key", "jobs", "--holder", "a\tb", "--", "true"}, []string{"--holder"}},
		{"malformed --ttl", nil, []string{"run", "--key", "jobs", "--ttl", "ten", "--", "true"}, []string{"--ttl", `"ten"`}},
		{"zero --ttl", nil, []string{"run", "--key", "jobs", "--ttl", "0s", "--", "true"}, []string{"--ttl", "must be positive"}},
		{"--ttl too short for the margin", nil, []string{"run", "--key", "jobs", "--ttl", "900ms", "--", "true"}, []string{"--ttl 900ms is too short for --margin 1s (the default)", "use --ttl 2s or more"}},
		{"--ttl too short for the guard", nil, []string{"run", "--key", "jobs", "--ttl", "300ms", "--margin", "50ms", "--", "true"}, []string{"--ttl 300ms is too short for the guard", "(7.5ms here)", "use --ttl 1s or more"}},
		{"--ttl just short for the guard", nil, []string{"run", "--key", "jobs", "--ttl", "999ms", "--margin", "50ms", "--", "true"}, []string{"--ttl 999ms is too short for the guard", "use --ttl 1s or more"}},
		{"--ttl too short for the margin and the guard", nil, []string{"run", "--key", "jobs", "--ttl", "60ms", "--margin", "50ms", "--", "true"}, []string{"--ttl 60ms is too short for --margin 50ms", "use --ttl 1s or more"}},
		{"--margin beyond the drift allowance", nil, []string{"run", "--key", "jobs", "--ttl", "2s", "--margin", "1990ms", "--", "true"}, []string{"--ttl 2s is too short for --margin 1.99s", "use --ttl 4s or more"}},
		{"--max-drift out of range", nil, []string{"run", "--key", "jobs", "--max-drift", "0.7", "--", "true"}, []string{"--max-drift (0.7) must be in [0, 0.5)"}},
		{"negative --margin", nil, []string{"run", "--key", "jobs", "--margin", "-1s", "--", "true"}, []string{"--margin (-1s) must not be negative"}},
		{"--margin below the least", nil, []string{"run", "--key", "jobs", "--margin", "0", "--", "true"}, []string{"--margin 0s is below the least margin, 50ms", "50ms − 0s = 50ms past it", "use --margin 50ms or more"}},
		{"verify --margin below the least", nil, []string{"verify", "--margin", "10ms"}, []string{"--margin 10ms is below the least margin, 50ms", "50ms − 10ms = 40ms past it"}},
		{"negative --kill-grace", nil, []string{"run", "--key", "jobs", "--kill-grace", "-1s", "--", "true"}, []string{"--kill-grace"}},
		{"negative --wait-timeout", nil, []string{"run", "--key", "jobs", "--wait-timeout", "-1s", "--", "true"}, []string{"--wait-timeout"}},
		{"malformed --http", nil, []string{"run", "--key", "jobs", "--http", "9480", "--", "true"}, []string{"--http", `"9480" is not host:port`}},
		{"malformed --http with --partitions", nil, []string{"run", "--key", "jobs", "--partitions", "4", "--http", "localhost:http-ish", "--", "true"}, []string{"--http", `port "http-ish"`}},
		{"status --partitions 0", nil, []string{"status", "--prefix", "", "--partitions", "0"}, []string{"--partitions (0) must be at least 1"}},
		{"status --names without partitions", nil, []string{"status", "--key", "jobs", "--partitions", "2", "--names", "a"}, []string{"--names gives 1 names for --partitions 2"}},
		{"malformed --dial-timeout", nil, []string{"--dial-timeout", "soon", "status", "--key", "jobs"}, []string{"--dial-timeout", `"soon"`}},
		{"zero --dial-timeout", nil, []string{"--dial-timeout", "0s", "status", "--key", "jobs"}, []string{"--dial-timeout (0s) must be positive"}},
		{"malformed TENURE_TTL", []string{"TENURE_TTL=10 seconds"}, []string{"run", "--key", "jobs", "--", "true"}, []string{"TENURE_TTL", `"10 seconds"`, "--ttl"}},
		{"malformed TENURE_DIAL_TIMEOUT", []string{"TENURE_DIAL_TIMEOUT=5"}, []string{"status", "--key", "jobs"}, []string{"TENURE_DIAL_TIMEOUT", "--dial-timeout"}},
		{"malformed TENURE_KILL_GRACE", []string{"TENURE_KILL_GRACE=x"}, []string{"run", "--key", "jobs", "--", "true"}, []string{"TENURE_KILL_GRACE"}},
		{"malformed TENURE_RESTART", []string{"TENURE_RESTART=sometimes"}, []string{"run", "--key", "jobs", "--", "true"}, []string{"TENURE_RESTART"}},
		{"bad key in TENURE_KEY", []string{"TENURE_KEY=a b"}, []string{"status"}, []string{"TENURE_KEY", `"a b"`}},
		{"unknown flag", nil, []string{"run", "--kee", "jobs", "--", "true"}, []string{"--kee"}},
		{"unknown backend", nil, []string{"demo", "--backend", "zookeeper"}, []string{`"zookeeper"`, "etcd, memory, postgres"}},
		{"postgres backend without a DSN", nil, []string{"demo", "--backend", "postgres"}, []string{"--postgres"}},
		{"postgres and endpoints", nil, []string{"--endpoints", "http://127.0.0.1:1", "--postgres", "postgres://localhost/db", "status", "--key", "jobs"}, []string{"--endpoints is for etcd"}},
		{"TENURE_ENDPOINTS with --postgres", []string{"TENURE_ENDPOINTS=http://127.0.0.1:1"}, []string{"--postgres", "postgres://localhost/db", "status", "--key", "jobs"}, []string{"TENURE_ENDPOINTS (--endpoints) is for etcd; it cannot be used with --postgres"}},
		{"TENURE_POSTGRES with --endpoints", []string{"TENURE_POSTGRES=postgres://localhost/db"}, []string{"--endpoints", "http://127.0.0.1:1", "status", "--key", "jobs"}, []string{"--endpoints is for etcd; it cannot be used with TENURE_POSTGRES (--postgres)"}},
		{"malformed DSN", nil, []string{"status", "--key", "jobs"}, nil},
		{"bad endpoint", nil, []string{"--endpoints", "ftp://x:1", "status", "--key", "jobs"}, []string{"ftp://x:1"}},
		{"missing CA file", nil, []string{"--tls-ca", "/nonexistent/ca.pem", "status", "--key", "jobs"}, []string{"--tls-ca", "/nonexistent/ca.pem"}},
		{"cert without key", nil, []string{"--tls-cert", "c.pem", "status", "--key", "jobs"}, []string{"--tls-cert and --tls-key"}},
		{"bad log level", nil, []string{"--log-level", "loud", "status", "--key", "jobs"}, []string{"--log-level", `"loud"`}},
		{"server with a bad URL", nil, []string{"server", "--listen-client", "127.0.0.1:2379", "--http", ""}, []string{"--listen-client", "127.0.0.1:2379"}},
		{"server with a bad cluster state", nil, []string{"server", "--initial-cluster-state", "old", "--http", ""}, []string{"--initial-cluster-state", `"old"`}},
		{"server with arguments", nil, []string{"server", "extra"}, []string{"extra"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := tc.args
			if tc.name == "malformed DSN" {
				args = append([]string{"--postgres", "postgres://tenure:secret@[::1/db"}, args...)
				tc.want = []string{"--postgres", "invalid DSN"}
			} else if tc.name != "postgres and endpoints" && tc.name != "bad endpoint" && !strings.HasPrefix(tc.name, "TENURE_ENDPOINTS") && !strings.HasPrefix(tc.name, "TENURE_POSTGRES") && tc.args[0] != "server" && tc.args[0] != "demo" {
				args = append(append([]string{}, nowhere...), args...)
			}
			res := e2e.RunTenure(t, tc.env, args...)
			if res.Code != cli.ExitUsage {
				t.Fatalf("%s: exit %d; want %d\nstderr: %s", res.Description, res.Code, cli.ExitUsage, res.Stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(res.Stderr, w) {
					t.Errorf("%s: stderr %q does not mention %q", res.Description, res.Stderr, w)
				}
			}
			if res.Took > e2e.Slack {
				t.Errorf("%s took %s; want a usage error at once, before dialling", res.Description, res.Took.Round(time.Millisecond))
			}
			if strings.Contains(res.Stderr, "secret") {
				t.Errorf("%s: stderr shows the password: %s", res.Description, res.Stderr)
			}
		})
	}
}

// TestHelp: every command explains itself, with examples, and run documents
// its exit codes and environment.
func TestHelp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cmd  string
		want []string
	}{
		{"", []string{"Exit codes", "TENURE_WAIT_TIMEOUT", "--postgres", "tenure server"}},
		{"server", []string{"--initial-cluster", "/healthz", "/metrics", "Example"}},
		{"run", []string{"TENURE_FENCING_TOKEN", "TENURE_LEASE_TTL", "--kill-grace", "local deadline", "Exit codes", "127", "--wait-timeout", "Examples"}},
		{"status", []string{"--prefix", "--json", "ttl_left_ms"}},
		{"watch", []string{"--json", "interrupted"}},
		{"demo", []string{"--backend", "postgres", "memory"}},
	} {
		args := []string{"--help"}
		if tc.cmd != "" {
			args = []string{tc.cmd, "--help"}
		}
		res := e2e.RunTenure(t, nil, args...)
		if res.Code != 0 {
			t.Errorf("tenure %s --help: exit %d; want 0", tc.cmd, res.Code)
		}
		for _, w := range tc.want {
			if !strings.Contains(res.Stdout, w) {
				t.Errorf("tenure %s --help does not mention %q", tc.cmd, w)
			}
		}
	}
}

// TestVerifySaysWhenTheEnvironmentPicksItsCoordinator: with TENURE_ENDPOINTS
// set, verify runs against that etcd instead of its embedded one, and its
// first line says the value came from the environment. Without the
// variable, the line says nothing of it.
func TestVerifySaysWhenTheEnvironmentPicksItsCoordinator(t *testing.T) {
	t.Parallel()
	res := e2e.RunTenure(t, []string{"TENURE_ENDPOINTS=http://127.0.0.1:1"}, "verify", "--duration", "5s", "--seed", "1")
	first, _, _ := strings.Cut(res.Stderr, "\n")
	if !strings.Contains(first, "from the environment: TENURE_ENDPOINTS (--endpoints)") {
		t.Errorf("%s: first line %q does not name TENURE_ENDPOINTS\nstderr: %s", res.Description, first, res.Stderr)
	}
	if !strings.Contains(res.Stdout+res.Stderr, "external etcd") {
		t.Errorf("%s: the summary does not say it ran against an external etcd:\n%s%s", res.Description, res.Stdout, res.Stderr)
	}
	if res.Code != cli.ExitInconclusive {
		t.Errorf("%s: exit %d; want %d (nothing listens there)", res.Description, res.Code, cli.ExitInconclusive)
	}
}
