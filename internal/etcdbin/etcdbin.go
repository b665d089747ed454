// Package etcdbin starts Debian's etcd binary (package etcd-server) for
// tests: one member on free loopback ports, in a temporary directory,
// stopped when the test ends. A test can crash it (SIGKILL) and start it
// again on the same ports and data.
package etcdbin

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/internal/freeport"
	"github.com/tenure-dev/tenure/internal/proc"
	"github.com/tenure-dev/tenure/internal/require"
)

// Path is where Debian's etcd-server package installs etcd.
const Path = "/usr/bin/etcd"

// readyWithin bounds how long a start waits for /health: liveness with
// slack for a loaded 2-core machine (etcd is ready in well under a second).
const readyWithin = 60 * time.Second

// Server is one etcd process started from Path.
type Server struct {
	// URL is the client URL, the same across restarts.
	URL string

	args []string
	log  *lockedBuffer

	proc proc.Slot // the running etcd
}

// Start starts etcd for t and returns its client URL once it answers
// /health. Without the binary, require.EtcdBinary decides: the test fails
// when the binary is required (CI), and is skipped with a notice otherwise.
func Start(t testing.TB) string {
	t.Helper()
	return New(t).URL
}

// New starts etcd for t like Start and returns the server, stopped at
// cleanup. Flags are added to etcd's command line (for example
// "--election-timeout", "1000").
func New(t testing.TB, flags ...string) *Server {
	t.Helper()
	if _, err := os.Stat(Path); err != nil {
		require.EtcdBinary.Missing(t, err)
	}
	urls, err := freeport.LocalURLs(2)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{
		URL: urls[0],
		args: []string{"--name", "bin", "--data-dir", filepath.Join(t.TempDir(), "data"),
			"--listen-client-urls", urls[0], "--advertise-client-urls", urls[0],
			"--listen-peer-urls", urls[1], "--initial-advertise-peer-urls", urls[1],
			"--initial-cluster", "bin=" + urls[1], "--initial-cluster-token", "tenure-test",
			"--log-level", "warn", "--logger", "zap"},
		log: &lockedBuffer{},
	}
	s.args = append(s.args, flags...)
	t.Cleanup(s.Kill)
	s.Restart(t)
	return s
}

// Restart starts the server again (after Kill) on the same ports and data
// directory, and waits until it answers /health.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	cmd := exec.Command(Path, s.args...)
	cmd.Stdout, cmd.Stderr = s.log, s.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	exited, err := s.proc.Start(cmd)
	if err != nil {
		t.Fatalf("start %s: %v", Path, err)
	}

	client := &http.Client{Timeout: time.Second}
	for began := time.Now(); time.Since(began) < readyWithin; time.Sleep(50 * time.Millisecond) {
		if resp, err := client.Get(s.URL + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-exited:
			t.Fatalf("%s exited while starting: %s\n%s", Path, cmd.ProcessState, s.tail())
		default:
		}
	}
	t.Fatalf("%s not ready within %s:\n%s", Path, readyWithin, s.tail())
}

// Kill crashes the server (SIGKILL, continuing it first if it was
// stopped) and waits for it to exit. It does nothing when the server is
// not running.
func (s *Server) Kill() { s.proc.Kill() }

// tail returns the last lines etcd logged.
func (s *Server) tail() string {
	lines := strings.Split(strings.TrimSpace(s.log.String()), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return "last lines of etcd's log:\n" + strings.Join(lines, "\n")
}

// lockedBuffer is a bytes.Buffer safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
