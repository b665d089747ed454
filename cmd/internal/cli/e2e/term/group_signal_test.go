package term

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/e2e"
)

// TestRunGroupSIGTERMGivesKillGrace: a SIGTERM sent to tenure's whole
// process group (what coreutils timeout, kill -- -PGID, systemd's
// KillMode=control-group and supervisord's stopasgroup do) reaches tenure,
// its guard and the command at once; the command still gets --kill-grace
// to clean up, and tenure exits with the command's code, as for a SIGTERM
// to tenure alone.
func TestRunGroupSIGTERMGivesKillGrace(t *testing.T) {
	t.Parallel()
	s := e2e.StartServer(t, t.TempDir())
	dir := t.TempDir()
	started, clean := filepath.Join(dir, "started"), filepath.Join(dir, "clean")
	script := `trap 'sleep 1; echo done > ` + clean + `; exit 0' TERM; echo up > ` + started + `; while :; do sleep 0.1; done`
	cmd := exec.Command(e2e.TenureBin, "run", "--endpoints", s.Endpoint, "--key", "group-term", "--kill-grace", "4s", "--", "sh", "-c", script)
	cmd.Env = e2e.CleanEnv()
	var out e2e.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	e2e.WaitFor(t, 20*time.Second, "the command to start", func() bool {
		_, err := os.Stat(started)
		return err == nil
	})
	if err := syscall.Kill(-pgid, syscall.SIGTERM); err != nil {
		t.Fatalf("kill -TERM -%d: %v", pgid, err)
	}
	_ = cmd.Wait()
	code := e2e.ExitCodeOf(cmd.ProcessState)
	if b, err := os.ReadFile(clean); err != nil || strings.TrimSpace(string(b)) != "done" {
		t.Errorf("the command never finished its SIGTERM handler (%v): it was killed within its 4s --kill-grace\n%s", err, &out)
	}
	if code != 0 {
		t.Errorf("tenure exited %d; want 0, the code the command's SIGTERM handler exited with\n%s", code, &out)
	}
	if strings.Contains(out.String(), "signal: killed") {
		t.Errorf("tenure says the command was killed:\n%s", &out)
	}
}
