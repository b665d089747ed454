package kube_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tenure-dev/tenure/internal/kubetest"
	"github.com/tenure-dev/tenure/internal/leakcheck"
	"github.com/tenure-dev/tenure/kube"
)

// srv is the test binary's shared server, set once by TestMain before any
// test runs and read-only afterwards.
var srv struct {
	s   *kubetest.Server
	err error
}

type testMain struct{ m *testing.M }

func (r testMain) Run() int {
	return kubetest.Main(r.m, func(s *kubetest.Server, err error) { srv.s, srv.err = s, err })
}

// TestMain starts one kube-apiserver that most tests share, each in a
// namespace of its own (shared); a test that crashes its server or needs
// RBAC starts its own (server).
func TestMain(m *testing.M) {
	leakcheck.VerifyTestMain(testMain{m})
}

// newNamespace creates a namespace of its own for t.
func newNamespace(t testing.TB, cs kubernetes.Interface) string {
	t.Helper()
	ns, err := cs.CoreV1().Namespaces().Create(ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tenure-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return ns.Name
}

// newCoordinator returns a Coordinator on cs in namespace ns, closed at
// cleanup.
func newCoordinator(t testing.TB, cs kubernetes.Interface, ns string) *kube.Coordinator {
	t.Helper()
	c, err := kube.New(cs, ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close() = %v", err)
		}
	})
	return c
}

// ctx returns a context for one call of a test.
func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

// shared returns the test binary's kube-apiserver, with an admin
// clientset; it skips (fails, in CI) t when there is none.
func shared(t testing.TB) (*kubetest.Server, kubernetes.Interface) {
	t.Helper()
	s := kubetest.Need(t, srv.s, srv.err)
	return s, s.Client(t)
}

// server starts a kube-apiserver for t and returns it with an admin
// clientset.
func server(t testing.TB, opts ...kubetest.Option) (*kubetest.Server, kubernetes.Interface) {
	t.Helper()
	s := kubetest.Start(t, opts...)
	return s, s.Client(t)
}
