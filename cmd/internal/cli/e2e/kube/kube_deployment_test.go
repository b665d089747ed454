package kube

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tenure-dev/tenure/cmd/internal/e2e"
	"github.com/tenure-dev/tenure/internal/kubetest"
)

// pod is one replica of the example Deployment, run as a process in a
// mount namespace of its own that holds the pod's service account files.
type pod struct {
	name string
	cmd  *exec.Cmd
	out  *e2e.SyncBuffer
	done chan struct{}
}

// leads reports whether the pod's leader command (the inner tenure watch)
// has printed the key's leader: only the pod that leads runs it.
func (p *pod) leads(key string) bool { return strings.Contains(p.out.String(), "  "+key+"  holder ") }

func (p *pod) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// runDeployment runs the example Deployment's container as its replicas
// would run in namespace ns with the service account token tok: the
// image's tenure with the container's args, $(VAR) references expanded
// from its env as the kubelet does, TENURE_NAMESPACE from the downward
// API, and the in-cluster configuration (KUBERNETES_SERVICE_HOST and
// _PORT, the token, ca.crt and namespace files under
// /var/run/secrets/kubernetes.io/serviceaccount, mounted in a mount
// namespace of each pod's own). It checks that one pod leads and its
// command keeps running (it reaches the coordinator itself), and that when
// that pod is killed whole another takes over within the TTL and its
// slack.
func runDeployment(t *testing.T, s *kubetest.Server, ex kubeExamples, ns, tok string) {
	t.Helper()
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Fatalf("unshare (util-linux) runs each pod in a mount namespace of its own: %v", err)
	}
	c := ex.deployment.Spec.Template.Spec.Containers[0]
	env := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace" {
			env[e.Name] = ns
		} else if e.ValueFrom == nil {
			env[e.Name] = e.Value
		}
	}
	args := make([]string, len(c.Args))
	ref := regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`) // $(VAR), as the kubelet expands it
	for i, a := range c.Args {
		args[i] = ref.ReplaceAllStringFunc(a, func(m string) string { return env[m[2:len(m)-1]] })
	}
	bin, sa := t.TempDir(), serviceAccountDir(t, s, ns, tok)
	if err := os.Symlink(e2e.TenureBin, filepath.Join(bin, "tenure")); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(u.Host)
	podEnv := append(e2e.CleanEnv(), "PATH="+bin+":"+os.Getenv("PATH"), "KUBERNETES_SERVICE_HOST="+host, "KUBERNETES_SERVICE_PORT="+port)
	for k, v := range env {
		podEnv = append(podEnv, k+"="+v)
	}
	const secrets = "/var/run/secrets/kubernetes.io/serviceaccount"
	script := `mount -t tmpfs tmpfs /run && mkdir -p ` + secrets + ` && cp "$SA"/* ` + secrets + `/ && exec tenure "$@"`
	var pods []*pod
	for i := range 3 {
		p := &pod{name: fmt.Sprintf("my-worker-%d", i), out: &e2e.SyncBuffer{}, done: make(chan struct{})}
		p.cmd = exec.Command("unshare", append([]string{"--mount", "--propagation", "private", "sh", "-c", script, "sh"}, args...)...)
		p.cmd.Env = append(podEnv, "SA="+sa, "HOSTNAME="+p.name)
		p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
		p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		p.cmd.WaitDelay = 10 * time.Second
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { _ = p.cmd.Wait(); close(p.done) }()
		t.Cleanup(func() {
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
			if t.Failed() {
				t.Logf("pod %s:\n%s", p.name, p.out)
			}
		})
		pods = append(pods, p)
	}
	key := "my-worker"
	leader := awaitLeadingPod(t, pods, key, 60*time.Second, nil)
	time.Sleep(5 * time.Second) // a leader command that cannot reach the coordinator exits at once
	if n := countLeading(pods, key); n != 1 || leader.exited() || strings.Contains(leader.out.String(), "command exited") {
		t.Fatalf("5s after %s led: %d pods ran the leader command; %s exited: %v; want one, still running", leader.name, n, leader.name, leader.exited())
	}
	killed := time.Now()
	_ = syscall.Kill(-leader.cmd.Process.Pid, syscall.SIGKILL) // the node dies: every process of the pod
	<-leader.done
	next := awaitLeadingPod(t, pods, key, 60*time.Second, leader)
	t.Logf("%s took over %s after %s was killed (TTL 15s)", next.name, time.Since(killed).Round(100*time.Millisecond), leader.name)
}

// serviceAccountDir writes the files the kubelet mounts for a pod's
// service account: its token, the cluster's CA and the namespace.
func serviceAccountDir(t *testing.T, s *kubetest.Server, ns, tok string) string {
	t.Helper()
	dir := t.TempDir()
	ca, err := os.ReadFile(s.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"token": []byte(tok), "ca.crt": ca, corev1.ServiceAccountNamespaceKey: []byte(ns)} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// awaitLeadingPod waits up to d for a pod other than not to run the leader
// command of key, and returns it.
func awaitLeadingPod(t *testing.T, pods []*pod, key string, d time.Duration, not *pod) *pod {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		for _, p := range pods {
			if p != not && p.leads(key) {
				return p
			}
		}
	}
	t.Fatalf("no pod ran the leader command of %q within %s", key, d)
	return nil
}

func countLeading(pods []*pod, key string) int {
	n := 0
	for _, p := range pods {
		if p.leads(key) {
			n++
		}
	}
	return n
}
