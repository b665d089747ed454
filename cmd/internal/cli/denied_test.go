package cli

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tenure-dev/tenure"
)

// TestDenied: a refusal of the permission or the credentials, as every
// coordinator marks it (tenure.ErrRefused, beside the backend's own
// error: each backend's TestRefusalClasses checks which it marks), exits
// 77, and stops tenure run (stopOnRefusal); a configuration refused
// exits 78; failures that retrying may cure (timeouts, 5xx answers,
// conflicts, unreachable coordinators), which the coordinators leave
// unmarked, exit neither.
func TestDenied(t *testing.T) {
	t.Parallel()
	leases := schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
	refusal := func(op string, err error) error { return fmt.Errorf("%s: %w: %w", op, tenure.ErrRefused, err) }
	for _, tc := range []struct {
		err  error
		want int
	}{
		{refusal("kube: acquire", apierrors.NewForbidden(leases, "jobs", errors.New(`User "reader" cannot create resource "leases"`))), ExitNoPerm},
		{refusal("kube: renew", apierrors.NewUnauthorized("token expired")), ExitNoPerm},
		{refusal("etcd: acquire", rpctypes.ErrPermissionDenied), ExitNoPerm},
		{refusal("postgres: acquire", &pgconn.PgError{Code: "42501"}), ExitNoPerm},
		{refusal("postgres: connect", &pgconn.PgError{Code: "28P01"}), ExitNoPerm},
		{refusal("postgres: connect", &pgconn.PgError{Code: "42704"}), ExitConfig},
		{apierrors.NewTimeoutError("slow", 1), 0},
		{apierrors.NewServerTimeout(leases, "update", 1), 0},
		{apierrors.NewInternalError(errors.New("etcd down")), 0},
		{apierrors.NewServiceUnavailable("starting"), 0},
		{apierrors.NewConflict(leases, "jobs", errors.New("the object has been modified")), 0},
		{apierrors.NewTooManyRequests("slow down", 1), 0},
		{rpctypes.ErrTimeout, 0},
		{&pgconn.PgError{Code: "40001"}, 0},
		{context.DeadlineExceeded, 0},
	} {
		if got := causeCode(tc.err); got != tc.want {
			t.Errorf("causeCode(%v) = %d; want %d", tc.err, got, tc.want)
		}
	}
}
