package bench

import (
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tenure-dev/tenure/cmd/internal/kubeconfig"
	"github.com/tenure-dev/tenure/kube"
)

// kubeConfig reads the target's kubeconfig file: the client configuration
// of its current context, without client-side rate limiting (the
// benchmarks measure the API server, and client-go's default limit of 5
// requests a second would be what they measured), and the namespace.
func (t Target) kubeConfig() (*rest.Config, string, error) {
	rc, ns, err := kubeconfig.Load(t.Kubeconfig, t.Namespace)
	if err != nil {
		return nil, "", fmt.Errorf("bench: --kubeconfig %s: %w", t.Kubeconfig, err)
	}
	rc.QPS = -1
	return rc, ns, nil
}

// kubeClient returns a client of its own on the Kubernetes target, with
// its namespace.
func (t Target) kubeClient() (kubernetes.Interface, string, error) {
	rc, ns, err := t.kubeConfig()
	if err != nil {
		return nil, "", err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, "", fmt.Errorf("bench: Kubernetes client: %w", err)
	}
	return cs, ns, nil
}

// kubeCoordinator opens a tenure coordinator with a client of its own on
// the Kubernetes target.
func (t Target) kubeCoordinator() (*kube.Coordinator, error) {
	cs, ns, err := t.kubeClient()
	if err != nil {
		return nil, err
	}
	return kube.New(cs, ns)
}
