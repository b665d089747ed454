package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/cmd/internal/e2e"
	"github.com/tenure-dev/tenure/internal/kubetest"
	"github.com/tenure-dev/tenure/kube"
)

// examplesDir is the repository's examples/ directory.
const examplesDir = "../../../../../examples"

// kubeExamples is examples/kubernetes, parsed strictly (an unknown field
// is an error).
type kubeExamples struct {
	account    corev1.ServiceAccount
	role       rbacv1.Role
	binding    rbacv1.RoleBinding
	deployment appsv1.Deployment
}

func parseKubeExamples(t *testing.T) kubeExamples {
	t.Helper()
	var ex kubeExamples
	targets := map[string]any{"ServiceAccount": &ex.account, "Role": &ex.role, "RoleBinding": &ex.binding, "Deployment": &ex.deployment}
	seen := map[string]bool{}
	for _, file := range []string{"rbac.yaml", "deployment.yaml"} {
		b, err := os.ReadFile(filepath.Join(examplesDir, "kubernetes", file))
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range bytes.Split(b, []byte("\n---\n")) {
			var meta metav1.TypeMeta
			if err := yaml.Unmarshal(doc, &meta); err != nil {
				t.Fatalf("%s document %d: %v", file, i+1, err)
			}
			target, ok := targets[meta.Kind]
			if !ok || seen[meta.Kind] {
				t.Fatalf("%s document %d: kind %q unexpected or repeated", file, i+1, meta.Kind)
			}
			if err := yaml.UnmarshalStrict(doc, target); err != nil {
				t.Fatalf("%s document %d (%s): %v", file, i+1, meta.Kind, err)
			}
			seen[meta.Kind] = true
		}
	}
	if len(seen) != len(targets) {
		t.Fatalf("examples/kubernetes holds %v; want a ServiceAccount, a Role, a RoleBinding and a Deployment", seen)
	}
	return ex
}

// TestKubeExamples: examples/kubernetes parses; a real API server (RBAC
// on) accepts its objects with strict field validation; the Deployment
// runs three replicas of tenure run in the service account the RoleBinding
// binds, with TENURE_NAMESPACE from the pod's namespace; that service
// account can do everything tenure does (the coordinator's every call, and
// tenure run and status), and without any one verb of the Role it cannot;
// and the Deployment's container, run as three pods would run it, elects
// one leader whose command keeps running, and another when that pod dies
// (runDeployment).
func TestKubeExamples(t *testing.T) {
	t.Parallel()
	ex := parseKubeExamples(t)
	checkDeployment(t, ex)
	s := kubetest.Start(t, kubetest.WithRBAC())
	admin := s.Client(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	ns, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "examples-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	strict := metav1.CreateOptions{FieldValidation: "Strict"}
	roles := admin.RbacV1().Roles(ns.Name)
	_, err1 := admin.CoreV1().ServiceAccounts(ns.Name).Create(ctx, &ex.account, strict)
	_, err2 := roles.Create(ctx, &ex.role, strict)
	_, err3 := admin.RbacV1().RoleBindings(ns.Name).Create(ctx, &ex.binding, strict)
	_, err4 := admin.AppsV1().Deployments(ns.Name).Create(ctx, &ex.deployment, strict)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		t.Fatalf("the API server refused the examples: %v", err)
	}
	tok, err := admin.CoreV1().ServiceAccounts(ns.Name).CreateToken(ctx, ex.account.Name, &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	account := s.TokenConfig(tok.Status.Token)

	awaitVerbs(t, account, ns.Name, "")
	kc := s.TokenKubeconfig(t, tok.Status.Token, ns.Name)
	for _, args := range [][]string{{"run", "--key", "my-worker", "--", "true"}, {"status", "--prefix", ""}} {
		if res := e2e.RunTenure(t, nil, append([]string{"--kubeconfig", kc}, args...)...); res.Code != 0 {
			t.Fatalf("%s as the example's service account: exit %d\n%s", res.Description, res.Code, res.Stderr)
		}
	}
	full := ex.role.Rules[0].Verbs
	for _, verb := range full {
		set := func(verbs []string) {
			r, err := roles.Get(ctx, ex.role.Name, metav1.GetOptions{})
			if err == nil {
				r.Rules[0].Verbs = verbs
				_, err = roles.Update(ctx, r, metav1.UpdateOptions{})
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		set(slices.DeleteFunc(slices.Clone(full), func(v string) bool { return v == verb }))
		awaitVerbs(t, account, ns.Name, verb)
		set(full)
		awaitVerbs(t, account, ns.Name, "")
	}
	runDeployment(t, s, ex, ns.Name, tok.Status.Token)
}

// checkDeployment checks what the Deployment promises.
func checkDeployment(t *testing.T, ex kubeExamples) {
	t.Helper()
	d := ex.deployment
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 3 {
		t.Errorf("Deployment replicas = %v; want 3", d.Spec.Replicas)
	}
	pod := d.Spec.Template.Spec
	if pod.ServiceAccountName != ex.account.Name || ex.binding.Subjects[0].Name != ex.account.Name || ex.binding.RoleRef.Name != ex.role.Name {
		t.Errorf("the pods run as %q, the RoleBinding binds %q to %q; want the ServiceAccount %q bound to the Role %q",
			pod.ServiceAccountName, ex.binding.Subjects[0].Name, ex.binding.RoleRef.Name, ex.account.Name, ex.role.Name)
	}
	c := pod.Containers[0]
	if len(c.Args) < 2 || c.Args[0] != "run" || !slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--key=") }) || !slices.Contains(c.Args, "--") {
		t.Errorf("container args %q; want tenure run --key=… -- the worker", c.Args)
	}
	checkLeaderCommand(t, c.Args)
	ok := slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == "TENURE_NAMESPACE" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace"
	})
	if !ok {
		t.Errorf("container env %v; want TENURE_NAMESPACE from the downward API (metadata.namespace): it selects Kubernetes in-cluster", c.Env)
	}
}

// awaitVerbs runs every call of the coordinator as cfg until they all
// succeed (missing == "") or one is forbidden for want of verb missing,
// for up to 10s (RBAC changes reach the authorizer through an informer).
func awaitVerbs(t *testing.T, cfg *rest.Config, ns, missing string) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		err = coordinatorCalls(t, cfg, ns)
		if missing == "" && err == nil {
			return
		}
		if missing != "" && apierrors.IsForbidden(err) && strings.Contains(err.Error(), `cannot `+missing+` resource "leases"`) {
			return
		}
	}
	if missing == "" {
		t.Fatalf("the example's service account with the example's Role: %v; want every call allowed", err)
	}
	t.Fatalf("the Role without %q: %v; want a call forbidden for want of %q (the check must be able to fail)", missing, err, missing)
}

// coordinatorCalls makes every call of the Kubernetes coordinator as cfg
// on a fresh key: create (Acquire), update (Renew, Release, Acquire over a
// released Lease), get (Leader), list (List, Watch) and watch (Watch), and
// those of partition groups.
func coordinatorCalls(t *testing.T, cfg *rest.Config, ns string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	c, err := kube.New(cs, ns)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	key := fmt.Sprintf("verbs-%d", time.Now().UnixNano())
	g, err := c.Acquire(ctx, key, "worker#1", 10*time.Second)
	if err != nil {
		return err
	}
	if g, err = c.Renew(ctx, g); err != nil {
		return err
	}
	if _, _, err := c.Leader(ctx, key); err != nil {
		return err
	}
	if _, err := c.List(ctx, ""); err != nil {
		return err
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	if _, err := c.Watch(wctx, key); err != nil {
		return err
	}
	if err := c.Release(ctx, g); err != nil {
		return err
	}
	if _, err = c.Acquire(ctx, key, "worker#2", 10*time.Second); err != nil {
		return err
	}
	return groupCalls(ctx, c, key)
}

// groupCalls makes every call of the coordinator's partition groups:
// create (JoinGroup, ClaimPartitions), update (RenewMember,
// ReleasePartitions), get (CheckPartitions), list (GroupMembers,
// GroupPartitions) and delete (LeaveGroup).
func groupCalls(ctx context.Context, c *kube.Coordinator, group string) error {
	m, err := c.JoinGroup(ctx, group, "worker#1", 10*time.Second, 2)
	if err != nil {
		return err
	}
	if m, err = c.RenewMember(ctx, m); err != nil {
		return err
	}
	res, err := c.ClaimPartitions(ctx, m, []string{"0", "1"})
	if err != nil {
		return err
	}
	var gs []tenure.Grant
	for _, r := range res {
		if r.Err != nil {
			return r.Err
		}
		gs = append(gs, r.Grant)
	}
	if _, err := c.CheckPartitions(ctx, m, gs); err != nil {
		return err
	}
	if _, err := c.GroupMembers(ctx, group); err != nil {
		return err
	}
	if _, err := c.GroupPartitions(ctx, group); err != nil {
		return err
	}
	if err := c.ReleasePartitions(ctx, m, gs[:1]); err != nil {
		return err
	}
	return c.LeaveGroup(ctx, m)
}

// checkLeaderCommand checks that the command tenure run's args start, when
// it is a tenure command that asks the coordinator, names the coordinator
// on its command line: tenure run gives its command none of tenure's own
// settings (TENURE_NAMESPACE included), so without a flag it would ask the
// default etcd, find none and exit 69.
func checkLeaderCommand(t *testing.T, args []string) {
	t.Helper()
	i := slices.Index(args, "--")
	if i < 0 || i+2 >= len(args) || args[i+1] != "tenure" {
		return
	}
	cmd := args[i+2:]
	if !slices.Contains([]string{"run", "status", "watch", "release"}, cmd[0]) {
		return
	}
	named := slices.ContainsFunc(cmd, func(a string) bool {
		for _, f := range []string{"--namespace", "--kubeconfig", "--endpoints", "--postgres"} {
			if a == f || strings.HasPrefix(a, f+"=") {
				return true
			}
		}
		return false
	})
	if !named {
		t.Errorf("the leader's command %q names no coordinator; want --namespace=$(TENURE_NAMESPACE): tenure run does not pass TENURE_NAMESPACE on", cmd)
	}
}
