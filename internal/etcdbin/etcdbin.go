// Package etcdbin starts Debian's etcd binary (package etcd-server) for
// tests: one member on free loopback ports, in a temporary directory,
// stopped when the test ends.
package etcdbin

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/embedded"
)

// Path is where Debian's etcd-server package installs etcd.
const Path = "/usr/bin/etcd"

// RequireEnv, set to 1 (as in CI), makes a missing binary fail the test
// instead of skipping it.
const RequireEnv = "TENURE_REQUIRE_ETCD_BINARY"

// Start starts etcd for t and returns its client URL once it answers
// /health. Without the binary the test is skipped, unless RequireEnv is 1.
func Start(t testing.TB) string {
	t.Helper()
	if _, err := os.Stat(Path); err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("%s=1 but %s is missing (install package etcd-server): %v", RequireEnv, Path, err)
		}
		t.Skipf("%s not installed (package etcd-server); set %s=1 to require it", Path, RequireEnv)
	}
	urls, err := embedded.FreeLocalURLs(2)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(Path, "--name", "bin", "--data-dir", filepath.Join(t.TempDir(), "data"),
		"--listen-client-urls", urls[0], "--advertise-client-urls", urls[0],
		"--listen-peer-urls", urls[1], "--initial-advertise-peer-urls", urls[1],
		"--initial-cluster", "bin="+urls[1], "--log-level", "warn", "--logger", "zap")
	log := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Process.Kill()
		<-done
	})
	client := &http.Client{Timeout: time.Second}
	for began := time.Now(); time.Since(began) < 30*time.Second; time.Sleep(50 * time.Millisecond) {
		if resp, err := client.Get(urls[0] + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return urls[0]
			}
		}
		select {
		case <-done:
			t.Fatalf("%s exited while starting:\n%s", Path, log)
		default:
		}
	}
	t.Fatalf("%s not ready within 30s:\n%s", Path, log)
	return ""
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
