// Package kubeconfig reads the client configuration of a kubeconfig file:
// what tenure's --kubeconfig and --namespace name, read the same way by
// the commands and by tenure verify's node processes.
package kubeconfig

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Load returns the client configuration of the current context of the
// kubeconfig file at path (its cluster and user), and the namespace to
// use: namespace when it is not empty, else the context's ("default" when
// the context names none). Its errors do not name the file: the caller
// does, as its user knows it (--kubeconfig FILE).
func Load(path, namespace string) (*rest.Config, string, error) {
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: path},
		&clientcmd.ConfigOverrides{Context: clientcmdapi.Context{Namespace: namespace}})
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, "", err
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, "", fmt.Errorf("namespace: %w", err)
	}
	return rc, ns, nil
}
