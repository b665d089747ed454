package denied

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/tenure-dev/tenure/cmd/internal/cli"
	"github.com/tenure-dev/tenure/cmd/internal/e2e"
	"github.com/tenure-dev/tenure/internal/kubetest"
)

// startAuthServer starts a tenure server with etcd's authentication
// enabled: user root (password "sesame", role root), then the users and
// roles each of steps adds with the client it is given.
func startAuthServer(t *testing.T, steps ...func(ctx context.Context, c *clientv3.Client) error) *e2e.Server {
	t.Helper()
	s := e2e.StartServer(t, t.TempDir())
	ctx := e2e.CtxFor(t, 30*time.Second)
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{s.Endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	root := func(ctx context.Context, c *clientv3.Client) error {
		if _, err := c.RoleAdd(ctx, "root"); err != nil {
			return err
		}
		if _, err := c.UserAdd(ctx, "root", "sesame"); err != nil {
			return err
		}
		_, err := c.UserGrantRole(ctx, "root", "root")
		return err
	}
	enable := func(ctx context.Context, c *clientv3.Client) error { _, err := c.AuthEnable(ctx); return err }
	for _, step := range append(append([]func(context.Context, *clientv3.Client) error{root}, steps...), enable) {
		if err := step(ctx, c); err != nil {
			t.Fatalf("enable etcd auth: %v", err)
		}
	}
	return s
}

// TestCredentials: etcd with authentication enabled refuses a wrong
// password and a missing user, clearly, and accepts the right ones, also
// from TENURE_PASSWORD.
func TestCredentials(t *testing.T) {
	t.Parallel()
	s := startAuthServer(t)

	// Authentication (bcrypt) is slow on a loaded machine: the dial timeout
	// is a liveness bound, with slack.
	ep := []string{"--endpoints", s.Endpoint, "--dial-timeout", (2*time.Second + e2e.Slack).String()}
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		code int
		want string
	}{
		{"wrong password", nil, []string{"--user", "root", "--password", "open-barley"}, cli.ExitNoPerm, `refused user "root"`},
		{"no user", nil, nil, cli.ExitNoPerm, "requires a user name and password"},
		{"password without user", []string{"TENURE_PASSWORD=sesame"}, nil, cli.ExitUsage, "--user is empty"},
		{"right password", nil, []string{"--user", "root", "--password", "sesame"}, 0, "no leader"},
		{"password from TENURE_PASSWORD", []string{"TENURE_PASSWORD=sesame", "TENURE_USER=root"}, nil, 0, "no leader"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := e2e.RunTenure(t, tc.env, append(append(ep, tc.args...), "status", "--key", "jobs")...)
			if res.Code != tc.code {
				t.Fatalf("%s: exit %d; want %d\n%s", res.Description, res.Code, tc.code, res.Stderr)
			}
			if !strings.Contains(res.Stdout+res.Stderr, tc.want) {
				t.Errorf("%s: output %q; want it to say %q", res.Description, res.Stdout+res.Stderr, tc.want)
			}
			for _, pw := range []string{"sesame", "open-barley"} {
				if strings.Contains(res.Stderr, pw) {
					t.Errorf("%s: stderr %q shows the password", res.Description, res.Stderr)
				}
			}
		})
	}
	res := e2e.RunTenure(t, []string{"TENURE_PASSWORD=sesame"}, append(ep, "--user", "root", "run", "--key", "jobs", "--", "sh", "-c", "echo $TENURE_FENCING_TOKEN")...)
	if res.Code != 0 || strings.TrimSpace(res.Stdout) == "" {
		t.Errorf("%s with the right credentials: exit %d, stdout %q; want 0 and a token\n%s", res.Description, res.Code, res.Stdout, res.Stderr)
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
		if res.Code != cli.ExitNoPerm || !strings.Contains(res.Stderr, "tenure: permission denied") || !strings.Contains(res.Stderr, want) {
			t.Errorf("%s: exit %d; want %d, the last line saying permission denied and %s\n%s", res.Description, res.Code, cli.ExitNoPerm, want, res.Stderr)
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
	if res.Code != cli.ExitNoPerm || !strings.Contains(res.Stderr, "tenure: permission denied") {
		t.Errorf("%s: exit %d; want %d saying permission denied\n%s", res.Description, res.Code, cli.ExitNoPerm, res.Stderr)
	}
}

// TestExitCodeKubeForbidden: a Kubernetes user whom RBAC lets not read or
// write Leases gets a permission error (77, EX_NOPERM), from status and
// from run; so does one who may only read them, from run's first write
// (kubeWriteForbidden).
func TestExitCodeKubeForbidden(t *testing.T) {
	t.Parallel()
	s := kubetest.Start(t, kubetest.WithRBAC(), kubetest.WithUser("nobody"), kubetest.WithUser("reader"))
	coord := []string{"--kubeconfig", s.Kubeconfig(t, "nobody", "default")}
	for _, args := range [][]string{{"status", "--key", "jobs"}, {"run", "--key", "jobs", "--wait-timeout", "20s", "--", "true"}} {
		res := e2e.RunTenure(t, nil, append(append([]string{}, coord...), args...)...)
		if res.Code != cli.ExitNoPerm || !strings.Contains(res.Stderr, "forbidden") {
			t.Errorf("%s: exit %d; want %d saying forbidden\n%s", res.Description, res.Code, cli.ExitNoPerm, res.Stderr)
		}
	}
	kubeWriteForbidden(t, s)
}

// TestExitCodeEtcdNoPermission: an etcd user whose role grants nothing on
// tenure's keys is a permission error (77, EX_NOPERM), from run at start
// (by the start-up read, or the campaign's error: the code is the cause's).
func TestExitCodeEtcdNoPermission(t *testing.T) {
	t.Parallel()
	s := startAuthServer(t, func(ctx context.Context, c *clientv3.Client) error {
		if _, err := c.RoleAdd(ctx, "none"); err != nil {
			return err
		}
		if _, err := c.UserAdd(ctx, "nobody", "sesame"); err != nil {
			return err
		}
		_, err := c.UserGrantRole(ctx, "nobody", "none")
		return err
	})
	res := e2e.RunTenure(t, nil, "--endpoints", s.Endpoint, "--dial-timeout", (2*time.Second + e2e.Slack).String(),
		"--user", "nobody", "--password", "sesame", "run", "--key", "jobs", "--wait-timeout", "20s", "--", "true")
	if res.Code != cli.ExitNoPerm || !strings.Contains(res.Stderr, "permission denied") {
		t.Errorf("%s: exit %d; want %d saying permission denied\n%s", res.Description, res.Code, cli.ExitNoPerm, res.Stderr)
	}
}
