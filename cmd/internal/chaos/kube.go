package chaos

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tenure-dev/tenure/cmd/internal/kubeconfig"
	"github.com/tenure-dev/tenure/internal/kubetest/apiserver"
	"github.com/tenure-dev/tenure/kube"
	"github.com/tenure-dev/tenure/partition"
)

// kubeRun is what a run on Kubernetes knows of its API server.
type kubeRun struct {
	// kubeconfig is the file the nodes read: Options.Kubeconfig, or one
	// written for the server the run started.
	kubeconfig string
	// namespace holds the Leases.
	namespace string
	// server is the API server the run started (Options.KubeAPIServer),
	// which the apiserver family restarts; nil for an external one.
	server *apiserver.Server
}

// kubeNamespace is the namespace of the Leases on an API server the run
// started: one every API server makes for itself.
const kubeNamespace = "default"

// startKube starts the run's API server on embedded etcd members when
// Options.KubeAPIServer names one, reads the kubeconfig, and returns the
// API server's address to proxy to.
func (r *runner) startKube(ctx context.Context) ([]string, error) {
	r.kube.kubeconfig = r.o.Kubeconfig
	ns := r.o.Namespace
	if r.o.KubeAPIServer != "" {
		if err := r.startAPIServer(ctx); err != nil {
			return nil, err
		}
		ns = kubeNamespace
	}
	rc, ns, err := kubeconfig.Load(r.kube.kubeconfig, ns)
	if err != nil {
		return nil, fmt.Errorf("chaos: kubeconfig %s: %w", r.kube.kubeconfig, err)
	}
	r.kube.namespace = ns
	hp, err := apiHostPort(rc.Host)
	if err != nil {
		return nil, fmt.Errorf("chaos: kubeconfig %s: server %q: %w", r.kube.kubeconfig, rc.Host, err)
	}
	return []string{hp}, nil
}

// startAPIServer starts the embedded etcd members and the kube-apiserver
// Options.KubeAPIServer names on them (not proxied: the faults strike
// between the nodes and the API server), and writes the kubeconfig the
// nodes read, with the token of its administrator.
func (r *runner) startAPIServer(ctx context.Context) error {
	addrs, err := r.startMembers(ctx)
	if err != nil {
		return err
	}
	dir := filepath.Join(r.o.Dir, "apiserver")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	var etcd []string
	for _, a := range addrs {
		etcd = append(etcd, "http://"+a)
	}
	s, err := apiserver.Start(ctx, apiserver.Config{Binary: r.o.KubeAPIServer, Dir: dir, EtcdServers: etcd})
	if err != nil {
		return fmt.Errorf("chaos: --kube-apiserver: %w", err)
	}
	r.kube.server = s
	r.kube.kubeconfig = filepath.Join(dir, "kubeconfig")
	tok, _ := s.Token(apiserver.Admin)
	return s.WriteKubeconfig(r.kube.kubeconfig, tok, kubeNamespace)
}

// restartAPIServer crashes the run's API server (SIGKILL), waits f.Dur,
// starts it again and waits until it is ready. It returns a note saying
// how long the restart took, or why there was none.
func (r *runner) restartAPIServer(ctx context.Context, f Fault) string {
	s := r.kube.server
	if s == nil {
		return "no API server of the run's own to restart"
	}
	s.Kill()
	if !sleepCtx(ctx, f.Dur) {
		return "not restarted: the run ended"
	}
	began := time.Now()
	if err := s.Restart(ctx); err != nil {
		return "restart failed: " + err.Error()
	}
	return fmt.Sprintf("ready %s after its restart", time.Since(began).Round(time.Millisecond))
}

// apiHostPort returns the host:port of an API server's URL (https:// when
// it names no scheme; the scheme's port when it names none).
func apiHostPort(host string) (string, error) {
	u, err := apiURL(host)
	if err != nil {
		return "", err
	}
	if u.Port() != "" {
		return u.Host, nil
	}
	port := "443"
	if u.Scheme == "http" {
		port = "80"
	}
	return net.JoinHostPort(u.Hostname(), port), nil
}

// apiURL parses an API server's address, https:// when it names no scheme.
func apiURL(host string) (*url.URL, error) {
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	u, err := url.Parse(host)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return nil, fmt.Errorf("scheme %q: want https:// or http://", u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("no host in %q", host)
	}
	return u, nil
}

// dialKube returns a coordinator on the Leases of the spec's namespace,
// reached through the node's proxy: the kubeconfig's cluster and user,
// with the proxy's address instead of the server's, the server's name
// still verifying its certificate, and no client-side rate limit (a few
// requests a TTL; a limit would only delay a takeover after a burst).
// Contenders wait out a Lease with the spec's drift allowance.
func dialKube(spec NodeSpec) (partition.Coordinator, error) {
	rc, _, err := kubeconfig.Load(spec.Kubeconfig, spec.Namespace)
	if err != nil {
		return nil, fmt.Errorf("chaos: kubeconfig %s: %w", spec.Kubeconfig, err)
	}
	if err := proxied(rc, spec.KubeProxy); err != nil {
		return nil, fmt.Errorf("chaos: kubeconfig %s: %w", spec.Kubeconfig, err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("chaos: kubeconfig %s: %w", spec.Kubeconfig, err)
	}
	return kube.New(cs, spec.Namespace, kube.WithMaxDrift(spec.MaxDrift))
}

// proxied points rc at the proxy addr instead of its server, keeping the
// server's name for verifying its certificate, and reports the writes of
// recorded calls (sendClock).
func proxied(rc *rest.Config, addr string) error {
	u, err := apiURL(rc.Host)
	if err != nil {
		return err
	}
	if rc.TLSClientConfig.ServerName == "" {
		rc.TLSClientConfig.ServerName = u.Hostname()
	}
	u.Host = addr
	rc.Host = u.String()
	rc.QPS = -1
	wrap := rc.WrapTransport
	rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		rt = sendClock{rt}
		if wrap != nil {
			rt = wrap(rt)
		}
		return rt
	}
	return nil
}
