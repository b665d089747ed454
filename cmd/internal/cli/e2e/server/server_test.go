package server

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/tenure-dev/tenure/cmd/internal/cli"
	"github.com/tenure-dev/tenure/cmd/internal/e2e"
	"github.com/tenure-dev/tenure/embedded"
)

// token runs a command under tenure run and returns the token it saw.
func token(t *testing.T, coord []string, key string) uint64 {
	t.Helper()
	res := e2e.RunTenure(t, nil, append(coord, "run", "--key", key, "--", "sh", "-c", `printf %s "$TENURE_FENCING_TOKEN"`)...)
	tok, err := strconv.ParseUint(res.Stdout, 10, 64)
	if res.Code != 0 || err != nil {
		t.Fatalf("%s: exit %d, stdout %q\n%s", res.Description, res.Code, res.Stdout, res.Stderr)
	}
	return tok
}

// TestServer: /healthz and /metrics; a clean, quick shutdown; a restart on
// the same data directory keeps tokens increasing.
func TestServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := e2e.StartServer(t, dir)
	if code, body := e2e.Get(t, s.HTTP, "/healthz"); code != http.StatusOK || strings.TrimSpace(body) != "ok" {
		t.Errorf("/healthz = %d %q; want 200 ok", code, body)
	}
	code, body := e2e.Get(t, s.HTTP, "/metrics")
	if code != http.StatusOK || !strings.Contains(body, "etcd_server_has_leader 1") {
		t.Errorf("/metrics = %d, %d bytes; want 200 with etcd_server_has_leader 1", code, len(body))
	}
	if code, _ := e2e.Get(t, s.HTTP, "/nothing"); code != http.StatusNotFound {
		t.Errorf("/nothing = %d; want 404", code)
	}
	before := token(t, s.Coord, "durable")

	began := time.Now()
	s.Stop(t)
	if took := time.Since(began); took > e2e.Slack {
		t.Errorf("server took %s to stop after SIGTERM; want under %s", took, e2e.Slack)
	}
	s = e2e.StartServer(t, dir)
	if after := token(t, s.Coord, "durable"); after <= before {
		t.Errorf("token after a restart on the same data = %d; want > %d", after, before)
	}
	s.Stop(t)

	// A port in use is reported before the member starts.
	other := e2e.StartServer(t, t.TempDir())
	res := e2e.RunTenure(t, nil, "server", "--data-dir", t.TempDir(), "--http", other.HTTP)
	if res.Code != cli.ExitUnavailable || !strings.Contains(res.Stderr, other.HTTP) {
		t.Errorf("%s: exit %d; want %d naming the address in use\n%s", res.Description, res.Code, cli.ExitUnavailable, res.Stderr)
	}
}

// TestServerCluster: three tenure server processes with --initial-cluster
// form one etcd cluster; tenure works through any member; a member that
// has lost its majority reports 503 on /healthz, and recovers.
func TestServerCluster(t *testing.T) {
	t.Parallel()
	urls, err := embedded.FreeLocalURLs(6)
	if err != nil {
		t.Fatal(err)
	}
	var initial []string
	for i := range 3 {
		initial = append(initial, fmt.Sprintf("m%d=%s", i+1, urls[2*i+1]))
	}
	procs := make([]*e2e.Proc, 3)
	for i := range 3 {
		procs[i] = e2e.StartProc(t, fmt.Sprintf("m%d", i+1), nil, "server", "--name", fmt.Sprintf("m%d", i+1),
			"--data-dir", t.TempDir(), "--listen-client", urls[2*i], "--listen-peer", urls[2*i+1],
			"--http", "127.0.0.1:0", "--initial-cluster", strings.Join(initial, ","))
	}
	members := make([]*e2e.Server, 3)
	for i, p := range procs {
		members[i] = e2e.AwaitServer(t, p, "")
	}
	all := []string{"--endpoints", strings.Join([]string{members[0].Endpoint, members[1].Endpoint, members[2].Endpoint}, ",")}

	ctx := e2e.CtxFor(t, 10*time.Second)
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{members[0].Endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	ml, err := c.MemberList(ctx)
	c.Close()
	if err != nil || len(ml.Members) != 3 {
		t.Fatalf("member list: %v, %d members; want 3", err, len(ml.Members))
	}

	holder := e2e.HoldKey(t, all, "cluster", "h")
	got := e2e.StatusJSON[cli.KeyStatus](t, nil, "--endpoints", members[2].Endpoint, "--key", "cluster")
	if len(got) != 1 || e2e.NameOf(got[0].Holder) != "h" {
		t.Fatalf("status through m3 = %+v; want held by h", got)
	}
	holder.Signal(t, syscall.SIGTERM)
	holder.Wait(t, 10*time.Second)

	for _, m := range members {
		if code, body := e2e.Get(t, m.HTTP, "/healthz"); code != http.StatusOK {
			t.Errorf("%s /healthz = %d %q; want 200", m.Name, code, body)
		}
	}
	members[1].Signal(t, syscall.SIGSTOP)
	members[2].Signal(t, syscall.SIGSTOP)
	e2e.WaitFor(t, 15*time.Second, "m1 to report 503 without a majority", func() bool {
		code, _ := e2e.Get(t, members[0].HTTP, "/healthz")
		return code == http.StatusServiceUnavailable
	})
	_, body := e2e.Get(t, members[0].HTTP, "/healthz")
	t.Logf("m1 without a majority: /healthz says %q", strings.TrimSpace(body))
	members[1].Signal(t, syscall.SIGCONT)
	members[2].Signal(t, syscall.SIGCONT)
	e2e.WaitFor(t, 15*time.Second, "m1 to report 200 again", func() bool {
		code, _ := e2e.Get(t, members[0].HTTP, "/healthz")
		return code == http.StatusOK
	})
	for _, m := range members {
		m.Stop(t)
	}
}

// TestServerPortInUse: a --listen-client or --listen-peer port in use is
// reported with the flag that named it, and leaves no data directory behind.
func TestServerPortInUse(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	url := "http://" + busy.Addr().String()
	free, err := embedded.FreeLocalURLs(2)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		flag         string
		client, peer string
	}{
		{"--listen-client", url, free[0]},
		{"--listen-peer", free[1], url},
	} {
		dir := filepath.Join(t.TempDir(), "tenure-data")
		res := e2e.RunTenure(t, nil, "server", "--data-dir", dir, "--listen-client", tc.client, "--listen-peer", tc.peer, "--http", "")
		if res.Code != cli.ExitUnavailable || !strings.Contains(res.Stderr, tc.flag+" "+url) || !strings.Contains(res.Stderr, "address already in use") {
			t.Errorf("%s: exit %d, stderr %q; want %d naming %s %s and the port in use", res.Description, res.Code, res.Stderr, cli.ExitUnavailable, tc.flag, url)
		}
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s left %s behind (stat: %v); want no data directory after a failed start", res.Description, dir, err)
		}
	}
}

// TestServerInsecureListen: tenure server refuses a plain client URL on
// every address with a usage error that names --insecure-listen, before
// it creates its data directory; with --insecure-listen it serves.
func TestServerInsecureListen(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "tenure-data")
	res := e2e.RunTenure(t, nil, "server", "--data-dir", dir, "--listen-client", "http://0.0.0.0:0", "--http", "")
	if res.Code != cli.ExitUsage || !strings.Contains(res.Stderr, "--listen-client http://0.0.0.0:0") || !strings.Contains(res.Stderr, "--insecure-listen") {
		t.Errorf("%s: exit %d, stderr %q; want %d naming the URL and --insecure-listen", res.Description, res.Code, res.Stderr, cli.ExitUsage)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s left %s behind (stat: %v); want no data directory", res.Description, dir, err)
	}
	peer, err := embedded.FreeLocalURLs(1)
	if err != nil {
		t.Fatal(err)
	}
	s := e2e.AwaitServer(t, e2e.StartProc(t, "server", nil, "server", "--data-dir", dir, "--listen-client", "http://0.0.0.0:0",
		"--listen-peer", peer[0], "--http", "", "--insecure-listen"), dir)
	s.Stop(t)
}
