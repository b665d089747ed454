package term

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tenure-dev/tenure/cmd/internal/e2e"
	"github.com/tenure-dev/tenure/cmd/internal/guard/guardtest"
)

// TestGuardZombieLeader: a command whose main thread ended with
// pthread_exit while its other threads run on (/proc shows it as a
// zombie, Z) is killed when tenure run is killed with SIGKILL, within the
// TTL (and slack); a second tenure run on the key, waiting meanwhile,
// never starts its copy while the first's lives, and starts it once it is
// gone. The same with --partitions 1.
//
// The TTL is zleaderTTL, longer than e2eTTL: the second takes the key a
// TTL and the margin after the first's last renewal, and a guard built
// with the race detector on a loaded machine has taken seconds to kill
// even a plain process.
func TestGuardZombieLeader(t *testing.T) {
	t.Parallel()
	prog, err := guardtest.States(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := e2e.StartServer(t, t.TempDir())
	for _, tc := range []struct {
		name  string
		extra []string
	}{
		{"key", nil},
		{"partitions", []string{"--partitions", "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			run := func(name string) *e2e.Proc {
				args := append([]string{"run", "--endpoints", s.Endpoint, "--key", "zleader-" + tc.name, "--ttl", zleaderTTL.String()}, tc.extra...)
				return e2e.StartProc(t, name, nil, append(args, "--", prog, "zleader", filepath.Join(dir, name))...)
			}
			testGuardZombieLeader(t, run, dir)
		})
	}
}

// testGuardZombieLeader runs TestGuardZombieLeader with tenure runs that
// run starts, their commands writing into dir.
func testGuardZombieLeader(t *testing.T, run func(name string) *e2e.Proc, dir string) {
	first := run("first")
	pid := zombieLeaderOf(t, first, filepath.Join(dir, "first"))
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		unix.PidfdSendSignal(fd, syscall.SIGKILL, nil, 0)
		unix.Close(fd)
	})
	second := run("second")
	e2e.WaitFor(t, 20*time.Second, "the second to campaign", func() bool {
		return strings.Contains(second.Err.String(), "campaigning") || strings.Contains(second.Err.String(), "joining the group")
	})
	time.Sleep(time.Second) // it reads the key held (or the group's partition owned)
	first.Signal(t, syscall.SIGKILL)
	killed := time.Now()
	for !pidfdExited(fd) {
		if commandStarted(second, filepath.Join(dir, "second")) && !pidfdExited(fd) {
			t.Fatalf("the second tenure run started its command while the first's (pid %d, state %c) lived, %s after the first tenure was killed",
				pid, e2e.ProcState(pid), time.Since(killed).Round(time.Millisecond))
		}
		if time.Since(killed) > zleaderTTL+e2e.Slack {
			t.Fatalf("the first's command (pid %d, state %c, %d thread(s)) still alive %s after its tenure run was killed (TTL %s)",
				pid, e2e.ProcState(pid), threadCount(pid), zleaderTTL+e2e.Slack, zleaderTTL)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("the first's command gone %s after kill -9 of its tenure run (TTL %s)", time.Since(killed).Round(time.Millisecond), zleaderTTL)
	e2e.WaitFor(t, 2*zleaderTTL+e2e.Slack+20*time.Second, "the second's command to start", func() bool { return commandStarted(second, filepath.Join(dir, "second")) })
	second.Signal(t, syscall.SIGTERM)
	second.Wait(t, 20*time.Second)
}

// zleaderTTL is TestGuardZombieLeader's TTL.
const zleaderTTL = 6 * time.Second

// zombieLeaderOf waits for tenure run p's command (states zleader) to be a
// zombie leader whose threads run (it writes its pid to out then), and
// returns its pid.
func zombieLeaderOf(t *testing.T, p *e2e.Proc, out string) int {
	t.Helper()
	var pid int
	e2e.WaitFor(t, 20*time.Second, "the command to be a zombie leader", func() bool {
		pid, _ = strconv.Atoi(strings.TrimSpace(e2e.ReadFile(out)))
		return pid != 0 && e2e.ProcState(pid) == 'Z' && threadCount(pid) == 3
	})
	return pid
}

// commandStarted reports whether tenure run p has started its command, which
// writes out.
func commandStarted(p *e2e.Proc, out string) bool {
	_, err := os.Stat(out)
	return err == nil || strings.Contains(p.Err.String(), "command started")
}

// pidfdExited reports whether the process of pidfd fd has exited, every thread
// of it.
func pidfdExited(fd int) bool {
	n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
	return err == nil && n == 1
}

// threadCount is how many threads /proc/PID/task lists.
func threadCount(pid int) int {
	tids, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	return len(tids)
}
