package verify

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/cli"
	"github.com/tenure-dev/tenure/cmd/internal/e2e"
)

// The note every verify run on an API server it did not start prints on
// its first line.
const noAPIServerFaults = "no apiserver faults: verify restarts only an API server it started, with --kube-apiserver"

// tenure verify --kubeconfig on a real API server: the build as shipped
// exits 0 with no violation, and the first line says which server and that
// it cannot be restarted.
func TestVerifyKube(t *testing.T) {
	t.Parallel()
	_, ns, coord := e2e.KubeCoord(t)
	report := filepath.Join(t.TempDir(), "report.json")
	args := append(coord, "verify", "--duration", "10s", "--seed", "5", "--faults", "partition,crash", "--json", report)
	res := e2e.RunTenure(t, e2e.CleanEnv(), args...)
	if res.Code != 0 {
		t.Fatalf("%s: exit %d; want 0\nstdout:\n%s\nstderr:\n%s", res.Description, res.Code, res.Stdout, res.Stderr)
	}
	if r := readVerifyReport(t, report); r.Violations != 0 || r.WritesAccepted == 0 {
		t.Fatalf("report = %+v; want no violation, some writes accepted", r)
	}
	first, _, _ := strings.Cut(res.Stderr, "\n")
	for _, want := range []string{"faults partition,crash (" + noAPIServerFaults + ")", "namespace " + ns} {
		if !strings.Contains(first, want) {
			t.Errorf("first line %q lacks %q", first, want)
		}
	}
}

// tenure verify --kubeconfig naming a server nobody listens on could not
// run: it exits cli.ExitInconclusive within --dial-timeout and says why.
func TestVerifyKubeUnreachable(t *testing.T) {
	t.Parallel()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	nowhere := "https://" + e2e.ClosedPort(t)
	yaml := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: jobs}}]
current-context: x
`, nowhere)
	if err := os.WriteFile(kc, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	res := e2e.RunTenure(t, e2e.CleanEnv(), "--kubeconfig", kc, "--dial-timeout", "3s", "verify", "--duration", "5s")
	if res.Code != cli.ExitInconclusive || res.Took > 30*time.Second {
		t.Fatalf("%s: exit %d after %s; want %d at once\nstderr:\n%s", res.Description, res.Code, res.Took, cli.ExitInconclusive, res.Stderr)
	}
	for _, want := range []string{"could not run", nowhere, noAPIServerFaults} {
		if !strings.Contains(res.Stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, res.Stderr)
		}
	}
}
