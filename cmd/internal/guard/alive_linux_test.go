package guard_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/guard"
	"github.com/tenure-dev/tenure/cmd/internal/guard/guardtest"
)

// TestAlive: a process whose leader ended with pthread_exit shows as a
// zombie and is alive while its threads run, both by the kernel's answer
// (pidfds) and by /proc/PID/task; SIGKILL to its pid ends them all. A
// zombie its parent has not reaped yet is not alive.
func TestAlive(t *testing.T) {
	prog, err := guardtest.States(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	zl := startStates(t, prog, "zleader")
	if p := procOf(t, zl.key); p.State != 'Z' || !p.Alive() || !guard.TasksLeft(zl.key) {
		t.Errorf("zombie leader %d (state %c) with threads running: Alive %v, TasksLeft %v; want both true", p.Pid, p.State, p.Alive(), guard.TasksLeft(zl.key))
	}
	z := startStates(t, prog, "zombie")
	for began := time.Now(); procOf(t, z.key).State != 'Z' && time.Since(began) < reportWithin; {
		time.Sleep(10 * time.Millisecond) // the child exits
	}
	if p := procOf(t, z.key); p.State != 'Z' || p.Alive() || guard.TasksLeft(z.key) {
		t.Errorf("unreaped zombie %d (state %c): Alive %v, TasksLeft %v; want both false", p.Pid, p.State, p.Alive(), guard.TasksLeft(z.key))
	}
	if p := procOf(t, z.cmd.Process.Pid); !p.Alive() {
		t.Errorf("the zombie's parent %d (state %c): Alive false", p.Pid, p.State)
	}
	if err := syscall.Kill(zl.key, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	zl.cmd.Wait() // reaped once every thread has exited
	if threads(zl.key) != 0 {
		t.Errorf("process %d has %d thread(s) after SIGKILL to its zombie leader; want none", zl.key, threads(zl.key))
	}
}

// stateProc is states.c run directly by the test: cmd, and key, the
// process in the state.
type stateProc struct {
	cmd *exec.Cmd
	key int
}

// startStates runs prog in mode and waits for the pid it writes.
func startStates(t *testing.T, prog, mode string) stateProc {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(prog, mode, out)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	for began := time.Now(); time.Since(began) < reportWithin; time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(out)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			return stateProc{cmd: cmd, key: pid}
		}
	}
	t.Fatalf("states %s wrote no pid within %s", mode, reportWithin)
	return stateProc{}
}

// procOf is pid as /proc shows it.
func procOf(t *testing.T, pid int) guard.Proc {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	p, err := guard.ParseStat(b)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
