package etcd_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/embedded"
	"github.com/tenure-dev/tenure/etcd"
	"github.com/tenure-dev/tenure/internal/leakcheck"
	"github.com/tenure-dev/tenure/internal/require"
)

func TestMain(m *testing.M) {
	leakcheck.VerifyTestMain(m)
}

// member is an embedded etcd member that a test can restart.
type member struct {
	mu  sync.Mutex
	s   *embedded.Server
	cfg embedded.Config
}

func (m *member) server() *embedded.Server {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.s
}

// stop closes the member (it may be restarted with start).
func (m *member) stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.s != nil {
		m.s.Close()
		m.s = nil
	}
}

// start starts the member from its configuration and data directory.
func (m *member) start(ctx context.Context) error {
	s, err := embedded.Start(ctx, m.cfg)
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.s = s
	m.mu.Unlock()
	return nil
}

// cluster is n embedded members, started together.
type cluster struct {
	members []*member
}

func (c *cluster) endpoints() []string {
	var eps []string
	for _, m := range c.members {
		eps = append(eps, m.cfg.ClientURLs...)
	}
	return eps
}

// startAll starts every stopped member concurrently: each waits for a quorum.
func (c *cluster) startAll(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(c.members))
	for i, m := range c.members {
		if m.server() != nil {
			continue
		}
		wg.Go(func() { errs[i] = m.start(ctx) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			c.stopAll()
			t.Fatalf("start member %d: %v", i+1, err)
		}
	}
}

func (c *cluster) stopAll() {
	for _, m := range c.members {
		m.stop()
	}
}

// leader returns the member that is the raft leader, waiting for one.
func (c *cluster) leader(t testing.TB) *member {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, m := range c.members {
			if s := m.server(); s != nil && s.IsLeader() {
				return m
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no raft leader within 10s")
	return nil
}

// startCluster starts an n-member embedded cluster, stopped at cleanup.
// Each function in configure may change the members' configurations.
func startCluster(t testing.TB, n int, configure ...func(*embedded.Config)) *cluster {
	t.Helper()
	cfgs, err := embedded.LocalCluster(t.TempDir(), n)
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{}
	for _, cfg := range cfgs {
		for _, f := range configure {
			f(&cfg)
		}
		c.members = append(c.members, &member{cfg: cfg})
	}
	c.startAll(t)
	t.Cleanup(c.stopAll)
	return c
}

// newClient returns an etcd client for eps, closed at cleanup.
func newClient(t testing.TB, eps []string) *clientv3.Client {
	t.Helper()
	cl, err := clientv3.New(clientv3.Config{
		Endpoints:   eps,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// newCoordinator returns a Coordinator on cl with a prefix unique to t,
// closed at cleanup.
func newCoordinator(t testing.TB, cl *clientv3.Client, opts ...etcd.Option) *etcd.Coordinator {
	t.Helper()
	c, err := etcd.New(cl, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close() = %v", err)
		}
	})
	return c
}

// ctx returns a context for one call of a test.
func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

// binary is an etcd server process from an installed binary.
type binary struct {
	path    string
	dir     string
	args    []string
	cmd     *exec.Cmd
	log     string
	exited  chan struct{}
	clients []string
}

// etcdBinary is where Debian's etcd-server package installs etcd 3.4.
const etcdBinary = "/usr/bin/etcd"

// startBinary starts /usr/bin/etcd in a temporary directory on free loopback
// ports, stopped at cleanup. When the binary is missing, require.EtcdBinary
// decides: a failure in CI, a skip with a notice otherwise.
func startBinary(t *testing.T) *binary {
	t.Helper()
	if _, err := os.Stat(etcdBinary); err != nil {
		require.EtcdBinary.Missing(t, err)
	}
	urls, err := embedded.FreeLocalURLs(2)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	b := &binary{
		path: etcdBinary,
		dir:  dir,
		log:  filepath.Join(dir, "etcd.log"),
		args: []string{
			"--name", "bin",
			"--data-dir", filepath.Join(dir, "data"),
			"--listen-client-urls", urls[0],
			"--advertise-client-urls", urls[0],
			"--listen-peer-urls", urls[1],
			"--initial-advertise-peer-urls", urls[1],
			"--initial-cluster", "bin=" + urls[1],
			"--initial-cluster-token", "tenure-test",
			"--logger", "zap",
			"--log-outputs", "stderr",
			"--log-level", "warn",
		},
		clients: urls[:1],
	}
	b.start(t)
	t.Cleanup(func() { b.stop(t) })
	return b
}

func (b *binary) start(t testing.TB) {
	t.Helper()
	logf, err := os.OpenFile(b.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(b.path, b.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("start %s: %v", b.path, err)
	}
	b.cmd = cmd
	b.exited = make(chan struct{})
	go func() {
		cmd.Wait()
		logf.Close()
		close(b.exited)
	}()
	// Ready when a linearizable read succeeds.
	cl := newClient(t, b.clients)
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := cl.Get(c, "ready")
		cancel()
		if err == nil {
			return
		}
		select {
		case <-b.exited:
			t.Fatalf("%s exited while starting: %s\n%s", b.path, b.cmd.ProcessState, b.tail())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready within 20s: %v\n%s", b.path, err, b.tail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill crashes the server (SIGKILL) and waits for it to exit.
func (b *binary) kill() {
	if b.cmd == nil {
		return
	}
	b.cmd.Process.Kill()
	<-b.exited
	b.cmd = nil
}

func (b *binary) stop(t testing.TB) {
	if b.cmd == nil {
		return
	}
	b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.exited:
	case <-time.After(10 * time.Second):
		t.Errorf("%s did not exit within 10s of SIGTERM; killing it", b.path)
		b.cmd.Process.Kill()
		<-b.exited
	}
	b.cmd = nil
}

func (b *binary) tail() string {
	data, _ := os.ReadFile(b.log)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return fmt.Sprintf("last lines of %s:\n%s", b.log, strings.Join(lines, "\n"))
}

// mustAcquire acquires key for holder and fails the test on error.
func mustAcquire(t testing.TB, c tenure.Coordinator, key, holder string, ttl time.Duration) tenure.Grant {
	t.Helper()
	g, err := c.Acquire(ctx(t), key, holder, ttl)
	if err != nil {
		t.Fatalf("Acquire(%q, %q, %s) error = %v", key, holder, ttl, err)
	}
	return g
}
