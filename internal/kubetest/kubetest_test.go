package kubetest_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tenure-dev/tenure/internal/kubetest"
	"github.com/tenure-dev/tenure/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

// TestStart starts a server, lists Leases through it, and restarts it.
func TestStart(t *testing.T) {
	s := kubetest.Start(t)
	cs := s.Client(t)
	if _, err := cs.CoordinationV1().Leases("default").List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Fatalf("list leases: %v", err)
	}
	s.Kill()
	if _, err := cs.CoordinationV1().Leases("default").List(t.Context(), metav1.ListOptions{}); err == nil {
		t.Fatal("list leases with the server killed: nil error; want a failure")
	}
	s.Restart(t)
	if _, err := cs.CoordinationV1().Leases("default").List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Fatalf("list leases after restart: %v", err)
	}
}
