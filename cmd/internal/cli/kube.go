package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/tenure-dev/tenure/internal/display"
	"github.com/tenure-dev/tenure/partition"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tenure-dev/tenure/cmd/internal/kubeconfig"
	"github.com/tenure-dev/tenure/kube"
)

// Kubernetes versions tenure needs: resourceVersions are comparable, and
// so usable as fencing tokens, since 1.35 (KEP-5504).
const (
	kubeMinMajor = 1
	kubeMinMinor = 35
)

// registerKube adds the Kubernetes flags to fs.
func registerKube(f *coordinatorFlags, fs *pflag.FlagSet) {
	fs.StringVar(&f.kubeconfig, "kubeconfig", "",
		"use Kubernetes Leases instead of etcd: a kubeconfig file (its current context's cluster, user and namespace)")
	fs.StringVar(&f.namespace, "namespace", "",
		"Kubernetes namespace of the Leases (default: the kubeconfig context's); without --kubeconfig, use Kubernetes through the pod's service account (in-cluster)")
}

// kube reports whether the flags select Kubernetes.
func (f *coordinatorFlags) kube() bool { return f.kubeconfig != "" || f.namespace != "" }

// backendFlag names the flag that selects a backend other than etcd, as
// given ("--postgres", "--kubeconfig", "--namespace"), or "" for etcd.
func (f *coordinatorFlags) backendFlag(fs *pflag.FlagSet) string {
	for _, name := range []string{"postgres", "kubeconfig", "namespace"} {
		if fl := fs.Lookup(name); fl != nil && fl.Value.String() != "" {
			return flagSetRef(fs, name)
		}
	}
	return ""
}

// checkKube reports Kubernetes flags that cannot work.
func (f *coordinatorFlags) checkKube() []error {
	var errs []error
	if f.kube() && f.postgres != "" {
		errs = append(errs, errors.New("--kubeconfig and --namespace are for Kubernetes; they cannot be used with --postgres"))
	}
	if f.namespace != "" {
		if msgs := validation.IsDNS1123Label(f.namespace); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--namespace %s is not a namespace name: %s", display.Input(f.namespace), strings.Join(msgs, "; ")))
		}
	}
	return errs
}

// restConfig returns the client configuration and namespace the flags
// name: the kubeconfig file's current context (--namespace overrides its
// namespace), or the pod's service account when only --namespace is
// given.
func (f *coordinatorFlags) restConfig() (*rest.Config, string, error) {
	if f.kubeconfig == "" {
		rc, err := rest.InClusterConfig()
		if errors.Is(err, rest.ErrNotInCluster) {
			return nil, "", fmt.Errorf("--namespace %s without --kubeconfig uses the pod's service account, but this is not a pod (KUBERNETES_SERVICE_HOST is unset): give --kubeconfig", f.namespace)
		}
		if err != nil {
			return nil, "", fmt.Errorf("in-cluster configuration (--namespace without --kubeconfig): %w", err)
		}
		return rc, f.namespace, nil
	}
	rc, ns, err := kubeconfig.Load(f.kubeconfig, f.namespace)
	if err != nil {
		return nil, "", fmt.Errorf("--kubeconfig %s: %w", f.kubeconfig, err)
	}
	return rc, ns, nil
}

// openKube connects to the Kubernetes API server the flags name, checks
// that its resourceVersions are comparable (1.35 or newer), and returns a
// coordinator on its Leases. ctx bounds the check (--dial-timeout).
func openKube(ctx context.Context, f *coordinatorFlags, log *slog.Logger) (partition.Coordinator, error) {
	rc, ns, err := f.restConfig()
	if err != nil {
		return nil, &exitError{code: ExitUsage, err: err}
	}
	f.announce(ctx, log, fmt.Sprintf("Kubernetes at %s, namespace %s", rc.Host, ns))
	// A few requests a TTL; client-go's default limit (5/s, bursts of 10)
	// would only delay a takeover that follows a burst.
	if rc.QPS == 0 {
		rc.QPS, rc.Burst = 50, 100
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, &exitError{code: ExitUsage, err: fmt.Errorf("Kubernetes client for %s: %w", rc.Host, err)}
	}
	if err := checkKubeVersion(ctx, cs, rc.Host, f); err != nil {
		return nil, err
	}
	c, err := kube.New(cs, ns, kube.WithLogger(log))
	if err != nil {
		return nil, &exitError{code: ExitUsage, err: err}
	}
	return c, nil
}

// checkKubeVersion asks the API server its version and refuses one older
// than 1.35, whose resourceVersions are not guaranteed comparable.
func checkKubeVersion(ctx context.Context, cs kubernetes.Interface, host string, f *coordinatorFlags) error {
	raw, err := cs.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("no answer from the Kubernetes API server at %s within --dial-timeout (%s): %w", host, f.dialTimeout, err)
		}
		return fmt.Errorf("Kubernetes API server at %s: %w", host, err)
	}
	var v version.Info
	if err := json.Unmarshal(raw, &v); err != nil {
		return fmt.Errorf("Kubernetes API server at %s: its /version: %w", host, err)
	}
	major, minor := leadingInt(v.Major), leadingInt(v.Minor)
	if major < kubeMinMajor || (major == kubeMinMajor && minor < kubeMinMinor) {
		return fmt.Errorf("%w: the Kubernetes API server at %s is version %s.%s: tenure needs %d.%d or newer, whose resourceVersions are comparable fencing tokens (KEP-5504)",
			kube.ErrIncomparable, host, v.Major, v.Minor, kubeMinMajor, kubeMinMinor)
	}
	return nil
}

// leadingInt parses the digits s starts with ("35+" → 35), or -1.
func leadingInt(s string) int {
	end := 0
	for end < len(s) && '0' <= s[end] && s[end] <= '9' {
		end++
	}
	n, err := strconv.Atoi(s[:end])
	if err != nil {
		return -1
	}
	return n
}
