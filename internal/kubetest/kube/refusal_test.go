package kube_test

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"

	"github.com/tenure-dev/tenure/internal/kubetest"
	"github.com/tenure-dev/tenure/internal/refusaltest"
)

// TestRefusalStopsRun: a user whom RBAC lets get, list and watch Leases
// but not create or update them has every write forbidden: an Elector's
// Run and a partition group's Run return the refusal, matching
// tenure.ErrRefused with the API server's Forbidden beneath it, instead of
// retrying it without end.
func TestRefusalStopsRun(t *testing.T) {
	t.Parallel()
	s, admin := server(t, kubetest.WithRBAC(), kubetest.WithUser("reader"))
	ns := newNamespace(t, admin)
	s.GrantLeaseReader(t, ns, "reader")
	cs, err := kubernetes.NewForConfig(s.Config("reader"))
	if err != nil {
		t.Fatal(err)
	}
	refusaltest.Stops(t, newCoordinator(t, cs, ns), "jobs", apierrors.IsForbidden)
}
