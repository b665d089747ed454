package chaos

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenure-dev/tenure/internal/kubetest"
	"github.com/tenure-dev/tenure/internal/plant"
	"github.com/tenure-dev/tenure/internal/require"
)

// kubeAPIServerBinary returns the kube-apiserver the tests run, or ends t
// as require.KubeAPIServer says (skipped with a notice, or failed when it
// is required).
func kubeAPIServerBinary(t *testing.T) string {
	t.Helper()
	bin, err := kubetest.Binary()
	if err != nil {
		require.KubeAPIServer.Missing(t, err)
	}
	return bin
}

// A run on an API server of its own (Options.KubeAPIServer), with the
// leader cut off, crashed and paused with a write in flight, and the API
// server itself killed and restarted, is clean and conclusive; the API
// server came back, and a leader wrote after it did.
func TestKubeVerify(t *testing.T) {
	t.Parallel()
	bin := kubeAPIServerBinary(t)
	const ttl = 2 * time.Second
	sched := []Fault{
		{At: 3 * time.Second, Family: FamilyPartition, Node: leaderNode, Dur: ttl * 5 / 4},
		{At: 7 * time.Second, Family: FamilyCrash, Node: leaderNode, Dur: ttl / 2},
		{At: 10 * time.Second, Family: FamilyAPIServer, Dur: ttl},
		{At: 15 * time.Second, Family: FamilyPause, Node: leaderNode, Dur: 2 * ttl},
	}
	h, err := Run(context.Background(), testOptions(func(o *Options) {
		o.KubeAPIServer, o.Duration, o.Schedule = bin, 24*time.Second, sched
	}))
	if err != nil {
		t.Fatal(err)
	}
	rep := Analyze(h)
	if !rep.OK() || !rep.Conclusive() {
		t.Fatalf("on Kubernetes: %s\n%s", rep.Verdict(), describe(rep))
	}
	if len(rep.Faults) != len(sched) {
		t.Fatalf("%d faults struck; want %d:\n%s", len(rep.Faults), len(sched), describe(rep))
	}
	restart := rep.Faults[2]
	if restart.Family != FamilyAPIServer || !strings.HasPrefix(restart.Note, "ready ") {
		t.Fatalf("the API server fault %+v did not restart it", restart)
	}
	if !acceptedAfter(h.Decisions, restart.End) {
		t.Errorf("no write accepted after the API server came back at %.3fs:\n%s", h.Rel(restart.End), describe(rep))
	}
	if !strings.HasPrefix(rep.Coordinator, "kube-apiserver") {
		t.Errorf("report's coordinator = %q; want the kube-apiserver the run started", rep.Coordinator)
	}
}

// The planted renewal after expiry is caught on an external API server
// (Options.Kubeconfig): its leader, cut off, carries on while another
// node, having seen the Lease unchanged for its duration, takes it over;
// the build as shipped is clean on the same schedule.
func TestKubePlantedBugIsCaught(t *testing.T) {
	t.Parallel()
	kubeAPIServerBinary(t)
	s := kubetest.Start(t)
	run := func(t *testing.T, p string, sched []Fault) *Report {
		ns, err := s.Client(t).CoreV1().Namespaces().Create(t.Context(),
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "verify-"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		kc := s.Kubeconfig(t, kubetest.Admin, ns.Name)
		return runScheduleOn(t, p, sched, func(o *Options) { o.Kubeconfig = kc })
	}
	testPlants(t, []string{plant.RenewAfterExpiry}, 1, run, caughtBy)
}
