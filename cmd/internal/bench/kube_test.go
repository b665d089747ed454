package bench

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"github.com/tenure-dev/tenure/internal/kubetest"
)

// kubeTarget starts a kube-apiserver for t and returns a target on it.
func kubeTarget(t *testing.T) Target {
	t.Helper()
	s := kubetest.Start(t)
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := s.WriteKubeconfig(kc, s.Config(kubetest.Admin).BearerToken, "default"); err != nil {
		t.Fatal(err)
	}
	return Target{Kubeconfig: kc, Progress: testWriter{t}}
}

// quietKlog silences client-go's process-wide log in this test binary:
// its in-process electors log every attempt.
func quietKlog(t *testing.T) {
	klog.SetLogger(logr.Discard())
}

// TestKube runs the Kubernetes benchmark, small, on a real API server:
// every part has rows for tenure and client-go, and no failure.
func TestKube(t *testing.T) {
	t.Parallel()
	quietKlog(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r, err := Kube(t.Context(), KubeOptions{
		Target: kubeTarget(t), TTL: 3 * time.Second,
		HandoverTrials: 3, FailoverTrials: 2, Fresh: 1, Idle: 2, Window: 3 * time.Second,
		Command: func(spec string) *exec.Cmd {
			c := exec.Command(self)
			c.Env = append(os.Environ(), childEnv+"="+spec)
			return c
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := r.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", buf.String())
	if len(r.Failures) != 0 {
		t.Errorf("failures: %q; want none", r.Failures)
	}
	rows := map[string]Row{}
	for _, row := range r.Rows {
		rows[row.Impl+"/"+row.Case] = row
	}
	for _, impl := range []string{"tenure", "client-go"} {
		for c, n := range map[string]int{"handover": 3, "failover": 2, "fresh candidate": 1} {
			if row, ok := rows[impl+"/"+c]; !ok || row.Latency == nil || row.Latency.N != n {
				t.Errorf("%s %s: row %+v; want %d samples", impl, c, row, n)
			}
		}
		if row := rows[impl+"/failover"]; row.Floor == nil || row.Floor.P50 <= 0 {
			t.Errorf("%s failover: floor %+v; want the old lease's end, bounded", impl, row.Floor)
		}
		for _, c := range []string{"idle follower", "leader"} {
			if _, ok := rows[impl+"/"+c].Extra["writes_per_s"]; !ok {
				t.Errorf("%s %s: no writes_per_s", impl, c)
			}
		}
	}
	if w := rows["tenure/idle follower"].Extra["writes_per_s"]; w != 0 {
		t.Errorf("tenure's idle followers wrote %.2f times a second; want none", w)
	}
	if w := rows["tenure/leader"].Extra["writes_per_s"]; w <= 0 {
		t.Errorf("tenure's leader wrote %.2f times a second; want its renewals counted", w)
	}
}
