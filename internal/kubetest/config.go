package kubetest

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Config returns a client configuration that authenticates as user (Admin,
// or a name given to WithUser), without client-side rate limiting. It
// panics for a user the server has no token for: a bug in the test.
func (s *Server) Config(user string) *rest.Config {
	tok, ok := s.tokens[user]
	if !ok {
		panic("kubetest: no token for user " + user + " (start the server WithUser)")
	}
	return &rest.Config{
		Host:            s.URL,
		BearerToken:     tok,
		TLSClientConfig: rest.TLSClientConfig{CAFile: s.CAFile},
		QPS:             -1, // no client-side rate limit: tests and benchmarks measure the server
	}
}

// Client returns a clientset for Admin.
func (s *Server) Client(t testing.TB) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(s.Config(Admin))
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// Kubeconfig writes a kubeconfig file for user whose context has namespace
// as its default, in t's temporary directory, and returns its path.
func (s *Server) Kubeconfig(t testing.TB, user, namespace string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := s.WriteKubeconfig(p, user, namespace); err != nil {
		t.Fatal(err)
	}
	return p
}

// WriteKubeconfig writes a kubeconfig file for user whose context has
// namespace as its default.
func (s *Server) WriteKubeconfig(path, user, namespace string) error {
	cfg := s.Config(user)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["kubetest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthority: s.CAFile}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["kubetest"] = &clientcmdapi.Context{Cluster: "kubetest", AuthInfo: user, Namespace: namespace}
	kc.CurrentContext = "kubetest"
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return clientcmd.WriteToFile(*kc, path)
}
