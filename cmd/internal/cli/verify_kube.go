package cli

import (
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes"
)

// kubeNamespace is the namespace of the Leases the flags name: --namespace,
// or the kubeconfig context's; "" when the kubeconfig cannot be read.
func kubeNamespace(c *coordinatorFlags) string {
	_, ns, err := c.restConfig()
	if err != nil {
		return ""
	}
	return ns
}

// checkVerifyKube asks the API server --kubeconfig names for its version
// before verify starts its nodes, within --dial-timeout: a server that
// cannot be reached, or one older than 1.35 (whose resourceVersions are
// not comparable fencing tokens), could only give a run that proves
// nothing. A kubeconfig it cannot read is a usage error.
func checkVerifyKube(ctx context.Context, c *coordinatorFlags) error {
	rc, _, err := c.restConfig()
	if err != nil {
		return &exitError{code: ExitUsage, err: err}
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("Kubernetes client for %s: %w", rc.Host, err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.dialTimeout)
	defer cancel()
	return checkKubeVersion(ctx, cs, rc.Host, c)
}
