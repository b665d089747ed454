package etcd_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/etcd"
	"github.com/tenure-dev/tenure/internal/freeport"
)

func TestDialUnreachable(t *testing.T) {
	t.Parallel() // it mostly waits for dial timeouts

	free, err := freeport.LocalURLs(1) // nothing listens there
	if err != nil {
		t.Fatal(err)
	}
	// A server that accepts connections and never answers, like a stopped
	// (SIGSTOP) etcd: connection attempts succeed, requests hang.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	silent := "http://" + l.Addr().String()
	tests := []struct {
		name      string
		endpoints []string
	}{
		{"refused", free},
		{"silent", []string{silent}},
		{"several", []string{silent, free[0]}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			const timeout = 500 * time.Millisecond
			start := time.Now()
			c, err := etcd.Dial(context.Background(), etcd.Config{Endpoints: tc.endpoints, DialTimeout: timeout})
			took := time.Since(start)
			if err == nil {
				c.Close()
				t.Fatalf("Dial(%v) succeeded; want an error", tc.endpoints)
			}
			if !errors.Is(err, etcd.ErrUnreachable) {
				t.Errorf("Dial(%v) error = %v; want it to wrap ErrUnreachable", tc.endpoints, err)
			}
			if !strings.Contains(err.Error(), tc.endpoints[0]) {
				t.Errorf("Dial error %q does not name the endpoint %s", err, tc.endpoints[0])
			}
			t.Logf("%v", err)
			if took > timeout+time.Second {
				t.Errorf("Dial took %s with DialTimeout %s; want it bounded by the timeout", took, timeout)
			}
		})
	}
	t.Run("refused fails at once", func(t *testing.T) {
		// Nothing listens: waiting out a long dial timeout cannot help.
		start := time.Now()
		_, err := etcd.Dial(context.Background(), etcd.Config{Endpoints: free, DialTimeout: time.Minute})
		if took := time.Since(start); !errors.Is(err, etcd.ErrUnreachable) || !strings.Contains(err.Error(), "connection refused") || took > 5*time.Second {
			t.Errorf("Dial(%v) = %v after %s; want ErrUnreachable, connection refused, at once", free, err, took)
		}
	})
	t.Run("context", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := etcd.Dial(ctx, etcd.Config{Endpoints: []string{silent}, DialTimeout: time.Minute})
		if err == nil || time.Since(start) > 5*time.Second {
			t.Errorf("Dial with a 200ms context = %v after %s; want an error at once", err, time.Since(start))
		}
	})
}

func TestDialBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  etcd.Config
		want string // the error must mention it
	}{
		{"no endpoints", etcd.Config{}, "Config.Endpoints"},
		{"bad scheme", etcd.Config{Endpoints: []string{"ftp://127.0.0.1:2379"}}, "ftp://127.0.0.1:2379"},
		{"upper-case https without TLS", etcd.Config{Endpoints: []string{"HTTPS://127.0.0.1:2379"}}, "in lower case"},
		{"mixed-case scheme (fuzz)", etcd.Config{Endpoints: []string{"hTtp://0:1"}}, "hTtp"},
		{"no port", etcd.Config{Endpoints: []string{"127.0.0.1"}}, `"127.0.0.1"`},
		{"port not a number", etcd.Config{Endpoints: []string{"http://127.0.0.1:42379x"}}, `invalid port`},
		{"host:port not a number", etcd.Config{Endpoints: []string{"127.0.0.1:2379x"}}, `port "2379x"`},
		{"port out of range", etcd.Config{Endpoints: []string{"127.0.0.1:70000"}}, `port "70000"`},
		{"scheme without ://", etcd.Config{Endpoints: []string{"http//127.0.0.1:2379"}}, `host "http//127.0.0.1"`},
		{"https without TLS", etcd.Config{Endpoints: []string{"https://127.0.0.1:2379"}}, "Config.TLS"},
		{"negative timeout", etcd.Config{Endpoints: []string{"127.0.0.1:2379"}, DialTimeout: -time.Second}, "Config.DialTimeout (-1s)"},
		{"password without user", etcd.Config{Endpoints: []string{"127.0.0.1:2379"}, Password: "x"}, "Config.Username"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := etcd.Dial(context.Background(), tc.cfg)
			if err == nil {
				c.Close()
				t.Fatalf("Dial(%+v) succeeded", tc.cfg)
			}
			if !errors.Is(err, etcd.ErrInvalidConfig) || !errors.Is(err, tenure.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Dial error = %q; want ErrInvalidConfig mentioning %q", err, tc.want)
			}
		})
	}
}

func TestDialAuth(t *testing.T) {
	t.Parallel()
	eps := startEtcd(t)
	admin := newClient(t, eps)
	if _, err := admin.RoleAdd(ctx(t), "root"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.UserAdd(ctx(t), "root", "s3cret"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.UserGrantRole(ctx(t), "root", "root"); err != nil {
		t.Fatal(err)
	}
	// nobody: a user etcd knows, with a role that may touch no key.
	if _, err := admin.RoleAdd(ctx(t), "none"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.UserAdd(ctx(t), "nobody", "pw"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.UserGrantRole(ctx(t), "nobody", "none"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.AuthEnable(ctx(t)); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name, user, password string
		want                 []string // the error mentions them
	}{
		{"wrong password", "root", "guess", []string{`"root"`, "authentication failed"}},
		{"unknown user", "mallory", "guess", []string{`"mallory"`}},
		{"no credentials", "", "", []string{"requires a user name and password"}},
		{"no permission", "nobody", "pw", []string{`accepted user "nobody"`, "may not read", "permission denied"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			c, err := etcd.Dial(context.Background(), etcd.Config{Endpoints: eps, Username: tc.user, Password: tc.password, DialTimeout: 20 * time.Second})
			if err == nil {
				c.Close()
				t.Fatal("Dial with bad credentials succeeded")
			}
			// A password refused is an authentication failure; a role
			// without the permission is not, and says so.
			if denied := tc.name == "no permission"; errors.Is(err, etcd.ErrAuth) == denied || !errors.Is(err, tenure.ErrRefused) && denied {
				t.Errorf("Dial error = %v; want it to wrap ErrAuth (a refused password) or, for a role without the permission, tenure.ErrRefused alone", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Dial error %q does not mention %s", err, w)
				}
			}
			if took := time.Since(start); took > 15*time.Second {
				t.Errorf("Dial took %s; want a prompt refusal", took)
			}
		})
	}

	// etcd checks a password with bcrypt: under -race on a loaded machine
	// that alone can outlast the default 5s dial timeout.
	c, err := etcd.Dial(context.Background(), etcd.Config{Endpoints: eps, Username: "root", Password: "s3cret", DialTimeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("Dial with the right credentials: %v", err)
	}
	defer c.Close()
	g := mustAcquire(t, c, "auth/k", "alice", 10*time.Second)
	if _, err := c.Renew(ctx(t), g); err != nil {
		t.Errorf("Renew with auth: %v", err)
	}
}

var _ tenure.Coordinator = (*etcd.Coordinator)(nil)

// Dial takes New's options: the coordinator it returns keeps its keys under
// WithPrefix's prefix, and an empty prefix is refused before any connection.
func TestDialOptions(t *testing.T) {
	t.Parallel()
	eps := startEtcd(t)
	c, err := etcd.Dial(ctx(t), etcd.Config{Endpoints: eps, DialTimeout: 20 * time.Second}, etcd.WithPrefix("/dialed/"))
	if err != nil {
		t.Fatalf("Dial(WithPrefix) error = %v", err)
	}
	defer c.Close()
	g := mustAcquire(t, c, "k", "alice", 10*time.Second)
	resp, err := newClient(t, eps).Get(ctx(t), "/dialed/k")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || resp.Kvs[0].ModRevision != int64(g.Token) {
		t.Errorf("etcd key /dialed/k = %v; want the grant of token %d written there", resp.Kvs, g.Token)
	}
	if _, err := etcd.Dial(ctx(t), etcd.Config{Endpoints: eps}, etcd.WithPrefix("")); !errors.Is(err, etcd.ErrInvalidConfig) {
		t.Errorf("Dial(WithPrefix(\"\")) error = %v; want ErrInvalidConfig", err)
	}
}
