package guard_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestGuardReportChannelClosed: a guard whose report channel tenure has
// closed (its end) is not killed by the SIGPIPE its report brings: it
// learns from the write's error (EPIPE) that nobody hears it, kills the
// command's tree at once as when tenure dies, and exits 0.
func TestGuardReportChannelClosed(t *testing.T) {
	out := filepath.Join(t.TempDir(), "pid")
	g := startGuard(t, time.Minute, nil, nil, "/bin/sh", "sh", "-c", `echo $$ > "$0"; exec sleep 60`, out)
	g.rep.Close()
	g.lease(t, time.Minute)
	select {
	case <-g.exited:
	case <-time.After(reportWithin):
		t.Fatalf("the guard, its report channel closed, has not exited %s after the lease that starts the command; want it to kill the tree and exit", reportWithin)
	}
	ws := g.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() || ws.ExitStatus() != 0 {
		t.Errorf("the guard, its report channel closed, ended with %v; want exit status 0", g.cmd.ProcessState)
	}
	// The command may be killed before it writes its pid.
	if pid := readInt(out); pid != 0 && syscall.Kill(pid, 0) == nil {
		t.Errorf("the command (pid %d) is alive after its guard exited", pid)
	}
	if b, _ := os.ReadFile(g.stderr); !strings.Contains(string(b), "broken pipe") {
		t.Errorf("the guard's stderr %q; want it to say its report met a broken pipe (EPIPE)", b)
	}
}
