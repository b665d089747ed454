package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/cmd/internal/e2e"
	"github.com/tenure-dev/tenure/internal/kubetest"
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

// kubeWriteForbidden: a Kubernetes user whom RBAC lets read Leases but
// not write them passes tenure run's start-up read, and then gets a
// permission error (77, EX_NOPERM) at the first write, naming the verb,
// the resource, the namespace and the user as the API server did, instead
// of campaigning forever: for a new key (create), a key whose Lease exists
// (update), and a partition group (the membership Lease's create). s has
// RBAC on and a user "reader" (TestExitCodeKubeForbidden: one API server
// for both).
func kubeWriteForbidden(t *testing.T, s *kubetest.Server) {
	t.Helper()
	s.GrantLeaseReader(t, "default", "reader")
	admin := []string{"--kubeconfig", s.Kubeconfig(t, kubetest.Admin, "default")}
	if res := e2e.RunTenure(t, nil, append(admin, "run", "--key", "existing", "--", "true")...); res.Code != 0 {
		t.Fatalf("%s as admin: exit %d\n%s", res.Description, res.Code, res.Stderr)
	}
	reader := []string{"--kubeconfig", s.Kubeconfig(t, "reader", "default")}
	for _, tc := range []struct {
		args []string
		verb string
	}{
		{[]string{"run", "--key", "fresh", "--wait-timeout", "20s", "--", "true"}, "create"},
		{[]string{"run", "--key", "existing", "--wait-timeout", "20s", "--", "true"}, "update"},
		{[]string{"run", "--key", "group", "--partitions", "2", "--", "true"}, "create"},
	} {
		res := e2e.RunTenure(t, nil, append(append([]string{}, reader...), tc.args...)...)
		want := fmt.Sprintf(`User "reader" cannot %s resource "leases" in API group "coordination.k8s.io" in the namespace "default"`, tc.verb)
		if res.Code != ExitNoPerm || !strings.Contains(res.Stderr, "tenure: permission denied") || !strings.Contains(res.Stderr, want) {
			t.Errorf("%s: exit %d; want %d, the last line saying permission denied and %s\n%s", res.Description, res.Code, ExitNoPerm, want, res.Stderr)
		}
	}
}

// TestRunEtcdWriteDenied: an etcd user whose role may read every key but
// write none passes tenure run's start-up read, and then gets a
// permission error (77, EX_NOPERM) at the first write instead of
// campaigning forever.
func TestRunEtcdWriteDenied(t *testing.T) {
	t.Parallel()
	s := startAuthServer(t, func(ctx context.Context, c *clientv3.Client) error {
		if _, err := c.RoleAdd(ctx, "reader"); err != nil {
			return err
		}
		if _, err := c.RoleGrantPermission(ctx, "reader", "\x00", "\x00", clientv3.PermissionType(clientv3.PermRead)); err != nil {
			return err
		}
		if _, err := c.UserAdd(ctx, "reader", "sesame"); err != nil {
			return err
		}
		_, err := c.UserGrantRole(ctx, "reader", "reader")
		return err
	})
	res := e2e.RunTenure(t, nil, "--endpoints", s.Endpoint, "--user", "reader", "--password", "sesame",
		"run", "--key", "jobs", "--wait-timeout", "20s", "--", "true")
	if res.Code != ExitNoPerm || !strings.Contains(res.Stderr, "tenure: permission denied") {
		t.Errorf("%s: exit %d; want %d saying permission denied\n%s", res.Description, res.Code, ExitNoPerm, res.Stderr)
	}
}
