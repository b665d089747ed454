package cli

import (
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/e2e"
)

// TestRunRestart: with --restart, a command that exits runs again, each
// time with a greater token, and no sooner than a second after the last
// start.
func TestRunRestart(t *testing.T) {
	t.Parallel()
	s := e2e.StartServer(t, t.TempDir())
	out := filepath.Join(t.TempDir(), "tokens")
	p := e2e.StartProc(t, "run", []string{"OUT=" + out}, "run", "--endpoints", s.Endpoint, "--key", "restart",
		"--restart", "--", "sh", "-c", `echo "$TENURE_FENCING_TOKEN" >> "$OUT"`)
	began := time.Now()
	e2e.WaitFor(t, 15*time.Second, "three runs", func() bool { return len(e2e.Lines(e2e.ReadFile(out))) >= 3 })
	if took := time.Since(began); took < 2*restartBackoff {
		t.Errorf("three quick runs took %s; want at least %s (restart backoff)", took, 2*restartBackoff)
	}
	var last uint64
	for _, l := range e2e.Lines(e2e.ReadFile(out)) {
		tok, err := strconv.ParseUint(l, 10, 64)
		if err != nil || tok <= last {
			t.Fatalf("tokens %q: want strictly increasing integers", e2e.Lines(e2e.ReadFile(out)))
		}
		last = tok
	}
	p.Signal(t, syscall.SIGTERM)
	if code := p.Wait(t, 10*time.Second); code != 128+int(syscall.SIGTERM) && code != 0 {
		t.Errorf("exit after SIGTERM = %d; want %d", code, 128+int(syscall.SIGTERM))
	}
}
