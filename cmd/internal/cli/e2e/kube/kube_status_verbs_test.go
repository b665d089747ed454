package kube

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tenure-dev/tenure/cmd/internal/cli"
	"github.com/tenure-dev/tenure/cmd/internal/e2e"
	"github.com/tenure-dev/tenure/internal/kubetest"
	"github.com/tenure-dev/tenure/kube"
)

// TestKubeStatusVerbs: tenure status --key needs list on leases, as
// docs/kubernetes.md's RBAC table says, and not get: a user whose Role
// allows list alone sees the holder of a led key; one whose Role allows
// get and watch but not list is refused (77).
func TestKubeStatusVerbs(t *testing.T) {
	t.Parallel()
	s := kubetest.Start(t, kubetest.WithRBAC(), kubetest.WithUser("looker"))
	admin := s.Client(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	nsObj, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "status-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns := nsObj.Name
	c, err := kube.New(admin, ns)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Acquire(ctx, "jobs", "alice#1", time.Minute); err != nil {
		t.Fatal(err)
	}
	looker, err := kubernetes.NewForConfig(s.Config("looker"))
	if err != nil {
		t.Fatal(err)
	}
	kc := s.Kubeconfig(t, "looker", ns)
	status := []string{"--kubeconfig", kc, "status", "--key", "jobs"}

	setLeaseVerbs(t, admin, ns, "list")
	awaitListAllowed(t, looker, ns, true)
	if res := e2e.RunTenure(t, nil, status...); res.Code != cli.ExitOK || !strings.Contains(res.Stdout, "alice") {
		t.Errorf("%s with list alone: exit %d, stdout %q; want 0 naming the holder alice\n%s", res.Description, res.Code, res.Stdout, res.Stderr)
	}

	setLeaseVerbs(t, admin, ns, "get", "watch")
	awaitListAllowed(t, looker, ns, false)
	if res := e2e.RunTenure(t, nil, status...); res.Code != cli.ExitNoPerm {
		t.Errorf("%s with get and watch but not list: exit %d; want %d\n%s", res.Description, res.Code, cli.ExitNoPerm, res.Stderr)
	}
}

// setLeaseVerbs binds the user "looker" to a Role in ns that allows verbs
// on leases, creating the Role and its binding or updating the Role.
func setLeaseVerbs(t *testing.T, admin kubernetes.Interface, ns string, verbs ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	rule := []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: verbs}}
	roles := admin.RbacV1().Roles(ns)
	r, err := roles.Get(ctx, "looker", metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = roles.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "looker"}, Rules: rule}, metav1.CreateOptions{})
		if err == nil {
			_, err = admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "looker"},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "looker"}},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "looker"},
			}, metav1.CreateOptions{})
		}
	case err == nil:
		r.Rules = rule
		_, err = roles.Update(ctx, r, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// awaitListAllowed waits until the authorizer (fed by an informer) lets cs
// list leases in ns, or forbids it, as allowed says.
func awaitListAllowed(t *testing.T, cs kubernetes.Interface, ns string, allowed bool) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		_, err = cs.CoordinationV1().Leases(ns).List(t.Context(), metav1.ListOptions{})
		if allowed && err == nil || !allowed && apierrors.IsForbidden(err) {
			return
		}
	}
	t.Fatalf("list leases in %s: %v; want allowed: %t", ns, err, allowed)
}
