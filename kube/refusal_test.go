package kube_test

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/kube"
)

// TestRefusalClasses: the API server's answers that waiting does not
// change (403 Forbidden, 401 Unauthorized) match tenure.ErrRefused with the
// StatusError still beneath; timeouts, 5xx answers, conflicts and
// throttling do not.
func TestRefusalClasses(t *testing.T) {
	leases := schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{apierrors.NewForbidden(leases, "jobs", errors.New(`User "reader" cannot create resource "leases"`)), true},
		{apierrors.NewUnauthorized("token expired"), true},
		{apierrors.NewTimeoutError("slow", 1), false},
		{apierrors.NewServerTimeout(leases, "update", 1), false},
		{apierrors.NewInternalError(errors.New("etcd down")), false},
		{apierrors.NewServiceUnavailable("starting"), false},
		{apierrors.NewConflict(leases, "jobs", errors.New("the object has been modified")), false},
		{apierrors.NewTooManyRequests("slow down", 1), false},
		{apierrors.NewNotFound(leases, "jobs"), false},
	} {
		got := kube.Refusal(fmt.Errorf("kube: acquire: %w", tc.err))
		var beneath *apierrors.StatusError
		if errors.Is(got, tenure.ErrRefused) != tc.want || !errors.As(got, &beneath) {
			t.Errorf("refusal(%v) = %v; want matching tenure.ErrRefused: %t, and the StatusError beneath", tc.err, got, tc.want)
		}
	}
}
