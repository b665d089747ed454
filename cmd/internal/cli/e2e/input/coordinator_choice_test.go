package input

import (
	"strings"
	"testing"

	"github.com/tenure-dev/tenure/cmd/internal/cli"
	"github.com/tenure-dev/tenure/cmd/internal/e2e"
	"github.com/tenure-dev/tenure/embedded"
)

// TestCoordinatorChoiceSaid: every command that reaches a coordinator says
// on one line of stderr which and what chose it: a flag, its environment
// twin, or the default. KUBECONFIG and a pod's KUBERNETES_SERVICE_HOST do
// not choose Kubernetes; with the default chosen, they turn the line into
// a warning that says how to use Kubernetes.
func TestCoordinatorChoiceSaid(t *testing.T) {
	t.Parallel()
	closed := "http://127.0.0.1:1"
	def := "etcd at " + embedded.DefaultClientURL
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want []string
		warn bool
	}{
		{"flag", nil, []string{"--endpoints", closed, "status", "--key", "k"},
			[]string{`coordinator="etcd at ` + closed + `"`, "chosen_by=--endpoints"}, false},
		{"environment twin", []string{"TENURE_ENDPOINTS=" + closed}, []string{"watch", "--key", "k"},
			[]string{`coordinator="etcd at ` + closed + `"`, `chosen_by="TENURE_ENDPOINTS (--endpoints)"`}, false},
		{"run", nil, []string{"--endpoints", closed, "run", "--key", "k", "--", "true"},
			[]string{`coordinator="etcd at ` + closed + `"`, "chosen_by=--endpoints"}, false},
		{"postgres", nil, []string{"--postgres", "postgres://u:secret@127.0.0.1:1/db", "--dial-timeout", "1s", "status", "--key", "k"},
			[]string{`coordinator="PostgreSQL at postgres://u:xxxxx@127.0.0.1:1/db"`, "chosen_by=--postgres"}, false},
		{"default", nil, []string{"--dial-timeout", "1s", "status", "--key", "k"},
			[]string{`coordinator="` + def + `"`, `chosen_by="default (no --endpoints, --postgres, --kubeconfig or --namespace)"`}, false},
		{"KUBECONFIG", []string{"KUBECONFIG=/etc/kube/config"}, []string{"--dial-timeout", "1s", "status", "--key", "k"},
			[]string{`coordinator="` + def + `"`, "KUBECONFIG is set, but tenure does not follow it: give --kubeconfig /etc/kube/config"}, true},
		{"KUBECONFIG and a flag", []string{"KUBECONFIG=/etc/kube/config"}, []string{"--endpoints", closed, "status", "--key", "k"},
			[]string{"chosen_by=--endpoints"}, false},
		{"pod", []string{"KUBERNETES_SERVICE_HOST=10.0.0.1"}, []string{"--dial-timeout", "1s", "status", "--key", "k"},
			[]string{`coordinator="` + def + `"`, "this is a Kubernetes pod", "give --namespace NAMESPACE"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := e2e.RunTenure(t, tc.env, tc.args...)
			line := e2e.CoordinatorLine(res.Stderr)
			if line == "" {
				t.Fatalf("%s: no coordinator line on stderr:\n%s", res.Description, res.Stderr)
			}
			if n := strings.Count(res.Stderr, `msg="using coordinator"`); n != 1 {
				t.Errorf("%s: %d coordinator lines; want one", res.Description, n)
			}
			for _, w := range tc.want {
				if !strings.Contains(line, w) {
					t.Errorf("%s: coordinator line %q lacks %q", res.Description, line, w)
				}
			}
			if warn := strings.Contains(line, "level=WARN"); warn != tc.warn {
				t.Errorf("%s: coordinator line %q: a warning %v; want %v", res.Description, line, warn, tc.warn)
			}
			if strings.Contains(res.Stderr, "secret") {
				t.Errorf("%s: stderr shows the password:\n%s", res.Description, res.Stderr)
			}
		})
	}
}

// TestCoordinatorChoiceAfterUsageErrors: flags that are wrong in a way
// found before connecting (an etcd URL of another scheme, a DSN that does
// not parse) are told first and alone, before any coordinator line.
func TestCoordinatorChoiceAfterUsageErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--endpoints", "ftp://x:1", "status", "--key", "k"},
		{"--postgres", "host=127.0.0.1 port=notaport dbname=x", "status", "--key", "k"},
	} {
		res := e2e.RunTenure(t, nil, args...)
		if res.Code != cli.ExitUsage || !strings.HasPrefix(res.Stderr, "tenure: ") || e2e.CoordinatorLine(res.Stderr) != "" {
			t.Errorf("%s: exit %d, stderr %q; want %d, the error alone", res.Description, res.Code, res.Stderr, cli.ExitUsage)
		}
	}
}

// TestBenchSaysItsCoordinator: bench, which reports progress as plain
// lines, names the coordinator it was given and what chose it.
func TestBenchSaysItsCoordinator(t *testing.T) {
	t.Parallel()
	res := e2e.RunTenure(t, []string{"TENURE_ENDPOINTS=http://127.0.0.1:1"}, "--dial-timeout", "1s",
		"bench", "throughput", "--clients", "1", "--duration", "100ms", "--rounds", "1")
	if want := "bench: using etcd at http://127.0.0.1:1 (chosen by TENURE_ENDPOINTS (--endpoints))"; !strings.Contains(res.Stderr, want) {
		t.Errorf("%s: stderr does not say %q:\n%s", res.Description, want, res.Stderr)
	}
}
