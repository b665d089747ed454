package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenure-dev/tenure/internal/kubetest"
)

// PostgresCoord returns the flags that name a fresh PostgreSQL database.
func PostgresCoord(t *testing.T) []string {
	t.Helper()
	return []string{"--postgres", Postgres(t).NewDatabase(t)}
}

// KubeCoord starts a kube-apiserver for t and returns it with the flags
// that name it: a kubeconfig for the admin whose context's namespace is a
// fresh one.
func KubeCoord(t *testing.T) (*kubetest.Server, string, []string) {
	t.Helper()
	s := kubetest.Start(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	ns, err := s.Client(t).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tenure-e2e-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s, ns.Name, []string{"--kubeconfig", s.Kubeconfig(t, kubetest.Admin, ns.Name)}
}
