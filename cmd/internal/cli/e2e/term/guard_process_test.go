package term

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/e2e"
	"github.com/tenure-dev/tenure/cmd/internal/guard"
	"github.com/tenure-dev/tenure/internal/boottime"
)

// commandPid is the pid of the command in tenure run's log line "command
// started … pid=N", once there is one.
func commandPid(t *testing.T, p *e2e.Proc) int {
	t.Helper()
	re := regexp.MustCompile(`command started.* pid=(\d+)`)
	var pid int
	e2e.WaitFor(t, 20*time.Second, "the command to start", func() bool {
		m := re.FindStringSubmatch(p.Err.String())
		if m != nil {
			pid, _ = strconv.Atoi(m[1])
		}
		return pid != 0
	})
	return pid
}

// TestGuardName: the guard shows in ps and top as tenure-guard, both as
// the process name (comm: "ps -o comm=", top) and as its argv[0] ("ps -o
// args=").
func TestGuardName(t *testing.T) {
	t.Parallel()
	s := e2e.StartServer(t, t.TempDir())
	p := e2e.StartProc(t, "run", nil, "run", "--endpoints", s.Endpoint, "--key", "named", "--", "sleep", "60")
	g := e2e.ParentOf(t, commandPid(t, p))
	if comm := strings.TrimSpace(e2e.ReadFile("/proc/" + strconv.Itoa(g) + "/comm")); comm != guard.Name {
		t.Errorf("the guard's process name (/proc/%d/comm, as ps -o comm= shows it) = %q; want %q", g, comm, guard.Name)
	}
	if argv := strings.Split(e2e.ReadFile("/proc/"+strconv.Itoa(g)+"/cmdline"), "\x00"); argv[0] != guard.Name {
		t.Errorf("the guard's argv = %q; want argv[0] %q", argv, guard.Name)
	}
	p.Signal(t, syscall.SIGTERM)
	p.Wait(t, 10*time.Second)
}

// TestGuardStartTooLate: a guard whose first lease's deadline has already
// passed when it gets it never starts the command; it reports why.
func TestGuardStartTooLate(t *testing.T) {
	t.Parallel()
	ctlW, ctlR, err := guard.Channel()
	if err != nil {
		t.Fatal(err)
	}
	repR, repW, err := guard.Channel()
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	cmd := exec.Command(e2e.TenureBin, guard.Command, "--", "/bin/sh", "sh", "-c", `touch "$0"`, marker)
	cmd.ExtraFiles = []*os.File{ctlR, repW}
	var stderr e2e.SyncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ctlR.Close()
	repW.Close()
	rep, err := guard.AcceptReport(repR, cmd.Process.Pid)
	repR.Close()
	if err != nil {
		t.Fatalf("the guard's report channel: %v\n%s", err, stderr.String())
	}
	defer rep.Close()
	lease := guard.Lease{Key: "late", Holder: "h", Token: 3, Deadline: boottime.Now().Add(-time.Millisecond), TTLMs: 2000, Live: true}
	if err := json.NewEncoder(ctlW).Encode(guard.Message{Op: guard.OpLease, Lease: &lease}); err != nil {
		t.Fatal(err)
	}
	var r guard.Report
	if err := json.NewDecoder(rep).Decode(&r); err != nil {
		t.Fatalf("the guard's report: %v\n%s", err, stderr.String())
	}
	ctlW.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("guard: %v\n%s", err, stderr.String())
	}
	if r.Pid != 0 || !r.Expired || !strings.Contains(r.Err, "deadline passed") {
		t.Errorf("report %+v; want no pid, expired, and why: the deadline passed", r)
	}
	time.Sleep(100 * time.Millisecond) // a command started anyway has touched the marker
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the command ran although its deadline had passed")
	}
	if !strings.Contains(stderr.String(), "command not started") {
		t.Errorf("guard stderr %q; want it to say the command was not started", stderr.String())
	}
}

// TestGuardSurvivor: a process of the command's tree that ignores SIGTERM,
// is re-parented to the guard when the command exits, and cannot be
// signalled for longer than 10s (tenure and the guard run without
// CAP_KILL; the survivor runs under another real uid) is named in the log and killed as soon as it can be;
// tenure then exits with the command's code.
func TestGuardSurvivor(t *testing.T) {
	t.Parallel()
	s := e2e.StartServer(t, t.TempDir())
	out := filepath.Join(t.TempDir(), "survivor")
	script := `TENURE_E2E_CHILD=survivor "$SELF" &
while [ ! -s "$OUT" ]; do sleep 0.05; done
exit 0`
	began := time.Now()
	p := e2e.StartNoKill(t, "run", []string{"OUT=" + out, "SELF=" + e2e.SelfBin}, "run", "--endpoints", s.Endpoint,
		"--key", "survivor", "--ttl", "5s", "--kill-grace", "100ms", "--", "sh", "-c", script)
	e2e.WaitFor(t, 20*time.Second, "the survivor's pid", func() bool { return strings.TrimSpace(e2e.ReadFile(out)) != "" })
	pid, err := strconv.Atoi(strings.TrimSpace(e2e.ReadFile(out)))
	if err != nil {
		t.Fatalf("survivor pid %q: %v", e2e.ReadFile(out), err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	if code := p.Wait(t, e2e.SurvivorFor+e2e.Slack+10*time.Second); code != 0 {
		t.Errorf("tenure exit %d; want 0, the command's code", code)
	}
	if took := time.Since(began); took < e2e.SurvivorFor-time.Second {
		t.Errorf("tenure exited %s after it started; want after the survivor could be signalled (%s): the test did not make a survivor", took, e2e.SurvivorFor)
	}
	e2e.WaitDead(t, pid, 5*time.Second, "the survivor")
	if log := p.Err.String(); !strings.Contains(log, "still alive") || !strings.Contains(log, "pid "+strconv.Itoa(pid)) ||
		!strings.Contains(log, "operation not permitted") {
		t.Errorf("tenure's log does not name the survivor (pid %d) and why it lives (operation not permitted):\n%s", pid, log)
	}
}
