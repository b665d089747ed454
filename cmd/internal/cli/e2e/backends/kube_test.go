package backends

import (
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenure-dev/tenure/cmd/internal/cli"
	"github.com/tenure-dev/tenure/cmd/internal/e2e"
	"github.com/tenure-dev/tenure/embedded"
	"github.com/tenure-dev/tenure/kube"
)

// TestKube: tenure run, status, watch and release with --kubeconfig work
// like the etcd versions, and write Leases client-go can read. Each case
// has keys of its own, and they run beside each other, after "status and
// watch", which lists every key held in the namespace.
func TestKube(t *testing.T) {
	t.Parallel()
	s, ns, coord := e2e.KubeCoord(t)

	t.Run("run", func(t *testing.T) {
		t.Parallel()
		var last uint64
		for i := range 2 {
			res := e2e.RunTenure(t, nil, append(coord, "run", "--key", "runs", "--", "sh", "-c", `printf %s "$TENURE_FENCING_TOKEN"`)...)
			if res.Code != 0 || !strings.Contains(res.Stderr, "backend=kubernetes") {
				t.Fatalf("%s: exit %d; want 0 on kubernetes\n%s", res.Description, res.Code, res.Stderr)
			}
			tok, err := strconv.ParseUint(res.Stdout, 10, 64)
			if err != nil || tok <= last {
				t.Fatalf("run %d: token %q; want an integer > %d", i+1, res.Stdout, last)
			}
			last = tok
		}
		l, err := s.Client(t).CoordinationV1().Leases(ns).Get(t.Context(), "runs", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "" {
			t.Fatalf("Lease runs after two runs: %v, %v; want it released (holderIdentity \"\")", l, err)
		}
	})
	t.Run("TENURE_KUBECONFIG and TENURE_NAMESPACE", func(t *testing.T) {
		t.Parallel()
		other := "default"
		res := e2e.RunTenure(t, []string{"TENURE_KUBECONFIG=" + coord[1], "TENURE_NAMESPACE=" + other},
			"run", "--key", "Env/Key", "--", "true")
		if res.Code != 0 || !strings.Contains(res.Stderr, "backend=kubernetes") {
			t.Fatalf("%s with TENURE_KUBECONFIG: exit %d; want 0 on kubernetes\n%s", res.Description, res.Code, res.Stderr)
		}
		if _, err := s.Client(t).CoordinationV1().Leases(other).Get(t.Context(), kube.LeaseName("Env/Key"), metav1.GetOptions{}); err != nil {
			t.Fatalf("the Lease in TENURE_NAMESPACE %s: %v", other, err)
		}
	})
	t.Run("KUBECONFIG", func(t *testing.T) {
		t.Parallel()
		// KUBECONFIG alone does not choose Kubernetes: status asks the
		// default etcd, and says so plainly, with how to ask Kubernetes.
		holder := e2e.HoldKey(t, coord, "kc/held", "holder-kc")
		defer func() { holder.Signal(t, syscall.SIGTERM); holder.Wait(t, 10*time.Second) }()
		res := e2e.RunTenure(t, []string{"KUBECONFIG=" + coord[1]}, "--dial-timeout", "2s", "status", "--key", "kc/held")
		line := e2e.CoordinatorLine(res.Stderr)
		for _, w := range []string{"level=WARN", `coordinator="etcd at ` + embedded.DefaultClientURL + `"`, "--kubeconfig " + coord[1]} {
			if !strings.Contains(line, w) {
				t.Errorf("%s with KUBECONFIG: coordinator line %q lacks %q\n%s", res.Description, line, w, res.Stderr)
			}
		}
		if res.Code == 0 && !strings.HasPrefix(res.Stdout, "coordinator: etcd at ") {
			t.Errorf("%s with KUBECONFIG: output %q does not name etcd", res.Description, res.Stdout)
		}
		st := e2e.StatusJSON[cli.KeyStatus](t, []string{"TENURE_KUBECONFIG=" + coord[1]}, "--key", "kc/held")
		if len(st) != 1 || !st[0].Held || e2e.NameOf(st[0].Holder) != "holder-kc" ||
			!strings.HasPrefix(st[0].Coordinator, "Kubernetes at https://") || !strings.HasSuffix(st[0].Coordinator, "namespace "+ns) {
			t.Errorf("status --json with TENURE_KUBECONFIG = %+v; want held by holder-kc, on Kubernetes, namespace %s", st, ns)
		}
	})
	t.Run("TTL disagreement", func(t *testing.T) {
		t.Parallel()
		holder := e2e.HoldKey(t, coord, "ttl", "holder-ttl")
		defer func() { holder.Signal(t, syscall.SIGTERM); holder.Wait(t, 10*time.Second) }()
		checkTTLWarning(t, coord, "ttl", "3s", true)
		checkTTLWarning(t, coord, "ttl", "10s", false)
	})
	t.Run("mutual exclusion", func(t *testing.T) {
		t.Parallel()
		holder := e2e.HoldKey(t, coord, "excl", "first")
		res := e2e.RunTenure(t, nil, append(coord, "run", "--key", "excl", "--wait-timeout", "1500ms", "--", "true")...)
		if res.Code != cli.ExitNotReady || !strings.Contains(res.Stderr, "first") {
			t.Errorf("%s: exit %d; want %d naming the holder\n%s", res.Description, res.Code, cli.ExitNotReady, res.Stderr)
		}
		holder.Signal(t, syscall.SIGTERM)
		holder.Wait(t, 10*time.Second)
		res = e2e.RunTenure(t, nil, append(coord, "run", "--key", "excl", "--wait-timeout", "3s", "--", "true")...)
		if res.Code != 0 {
			t.Errorf("%s after the holder stopped: exit %d; want 0\n%s", res.Description, res.Code, res.Stderr)
		}
	})
	t.Run("release", func(t *testing.T) {
		t.Parallel()
		e2e.HoldKey(t, coord, "stuck", "stuck-holder")
		res := e2e.RunTenure(t, nil, append(coord, "release", "--key", "stuck", "--force", "--json")...)
		if res.Code != 0 || !strings.Contains(res.Stdout, `"released":true`) {
			t.Fatalf("%s: exit %d; want the grant released\n%s%s", res.Description, res.Code, res.Stdout, res.Stderr)
		}
	})
	t.Run("status and watch", func(t *testing.T) { testStatusAndWatch(t, coord) })
	t.Run("SIGKILL failover", func(t *testing.T) { t.Parallel(); e2e.SIGKILLFailover(t, coord) })
}

// TestKubeFlags: flags that cannot work with Kubernetes are usage errors
// that name them.
func TestKubeFlags(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--kubeconfig", "/nonexistent", "--endpoints", "http://127.0.0.1:2379", "status", "--key", "k"}, "--endpoints is for etcd; it cannot be used with --kubeconfig"},
		{[]string{"--namespace", "ns", "--user", "u", "status", "--key", "k"}, "--user is for etcd; it cannot be used with --namespace"},
		{[]string{"--kubeconfig", "/nonexistent", "--postgres", "postgres://h/db", "status", "--key", "k"}, "cannot be used with --postgres"},
		{[]string{"--namespace", "Bad_NS", "status", "--key", "k"}, `--namespace "Bad_NS" is not a namespace name`},
		{[]string{"--namespace", "ns", "status", "--key", "k"}, "this is not a pod (KUBERNETES_SERVICE_HOST is unset): give --kubeconfig"},
		{[]string{"--kubeconfig", "/nonexistent", "status", "--key", "k"}, "--kubeconfig /nonexistent"},
		{[]string{"--kubeconfig", "/nonexistent", "server"}, "does not use --kubeconfig"},
	}
	for _, tc := range cases {
		res := e2e.RunTenure(t, nil, tc.args...)
		if res.Code != cli.ExitUsage || !strings.Contains(res.Stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", res.Description, res.Code, res.Stderr, cli.ExitUsage, tc.want)
		}
	}
}
