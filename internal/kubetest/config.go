package kubetest

import (
	"path/filepath"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Config returns a client configuration that authenticates as user (Admin,
// or a name given to WithUser), without client-side rate limiting. It
// panics for a user the server has no token for: a bug in the test.
func (s *Server) Config(user string) *rest.Config {
	tok, ok := s.srv.Token(user)
	if !ok {
		panic("kubetest: no token for user " + user + " (start the server WithUser)")
	}
	return s.TokenConfig(tok)
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

// TokenConfig returns a client configuration that authenticates with a
// bearer token of another kind (a service account's, from the TokenRequest
// API), without client-side rate limiting.
func (s *Server) TokenConfig(token string) *rest.Config {
	return &rest.Config{
		Host:            s.URL,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAFile: s.CAFile},
		QPS:             -1, // no client-side rate limit: tests and benchmarks measure the server
	}
}

// Kubeconfig writes a kubeconfig file for user whose context has namespace
// as its default, in t's temporary directory, and returns its path.
func (s *Server) Kubeconfig(t testing.TB, user, namespace string) string {
	t.Helper()
	return s.TokenKubeconfig(t, s.Config(user).BearerToken, namespace)
}

// TokenKubeconfig writes a kubeconfig file that authenticates with token
// and whose context has namespace as its default, in t's temporary
// directory, and returns its path.
func (s *Server) TokenKubeconfig(t testing.TB, token, namespace string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := s.WriteKubeconfig(p, token, namespace); err != nil {
		t.Fatal(err)
	}
	return p
}

// WriteKubeconfig writes a kubeconfig file that authenticates with token
// and whose context has namespace as its default.
func (s *Server) WriteKubeconfig(path, token, namespace string) error {
	return s.srv.WriteKubeconfig(path, token, namespace)
}
