package kubetest

import (
	"context"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// GrantLeaseReader binds user to a Role that allows get, list and watch
// on Leases in namespace, and waits until the authorizer lets user list
// them (RBAC changes reach it through an informer). The server must run
// WithRBAC and WithUser(user).
func (s *Server) GrantLeaseReader(t testing.TB, namespace, user string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	admin := s.Client(t)
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "lease-reader"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch"},
	}}}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "lease-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
	}
	if _, err := admin.RbacV1().Roles(namespace).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().RoleBindings(namespace).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(s.Config(user))
	if err != nil {
		t.Fatal(err)
	}
	for {
		_, err := cs.CoordinationV1().Leases(namespace).List(ctx, metav1.ListOptions{})
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("%s still cannot list Leases in %s: %v", user, namespace, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
