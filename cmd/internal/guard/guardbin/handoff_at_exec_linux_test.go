//go:build linux

// A guard is dumpable from its execve until its own PR_SET_DUMPABLE
// (guard.Undumpable, in its main). In that instant a process of the same
// user, not root, may take the guard's channels with pidfd_getfd, or
// ptrace it, where the kernel lets a user trace its own processes (no
// Yama, as on this kernel, or Yama's ptrace_scope 0). Measured before the
// handover: a process of tenure's user reading /proc in a loop took the
// report channel of 24 of the 29 guards that tenure run --restart started
// in 30 s. The guard therefore hands tenure a report channel made once it
// is not dumpable, and refuses to go on while traced; these tests show
// that what such a process does in that instant never reaches tenure.

package guardbin_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tenure-dev/tenure/cmd/internal/guard"
	"github.com/tenure-dev/tenure/cmd/internal/guard/guardbin"
)

// takeEnv, "PID FD WHEN" in its environment, makes the test binary take
// file descriptor FD of process PID (pidfd_getfd), say "taken" on its
// standard output, and write forgedReport on it: at once (WHEN "now"),
// once its standard input ends (WHEN "later"), or on a socket pair of its
// own whose other end it sends on it first, as the guard hands over its
// report channel (WHEN "handoff").
const takeEnv = "TENURE_GUARDBIN_TEST_TAKE"

// traceEnv, a pid in its environment, makes the test binary attach to
// that process (ptrace), say "attached" on its standard output, and stay
// attached, letting it run, until it ends.
const traceEnv = "TENURE_GUARDBIN_TEST_TRACE"

// forgedReport says the command exited 0.
const forgedReport = `{"exited":true,"code":0,"status":"exit status 0"}` + "\n"

func init() {
	if v := os.Getenv(takeEnv); v != "" {
		os.Exit(take(v))
	}
	if v := os.Getenv(traceEnv); v != "" {
		runtime.LockOSThread() // the tracer is this thread
		os.Exit(trace(v))
	}
}

// take is the test binary as takeEnv makes it.
func take(v string) int {
	var pid, fd int
	var when string
	_, err := fmt.Sscan(v, &pid, &fd, &when)
	var pfd int
	if err == nil {
		pfd, err = unix.PidfdOpen(pid, 0)
	}
	if err == nil {
		fd, err = unix.PidfdGetfd(pfd, fd, 0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "take fd: %v\n", err)
		return 1
	}
	fmt.Println("taken")
	switch when {
	case "later":
		io.Copy(io.Discard, os.Stdin)
	case "handoff": // a report channel of its own, for the guard's
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if err == nil {
			err = unix.Sendmsg(fd, []byte{'H'}, unix.UnixRights(fds[0]), nil, 0)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "hand over a channel: %v\n", err)
			return 1
		}
		fd = fds[1]
	}
	if _, err := unix.Write(fd, []byte(forgedReport)); err != nil {
		fmt.Fprintf(os.Stderr, "write on the taken fd: %v\n", err)
		return 1
	}
	return 0
}

// trace is the test binary as traceEnv makes it.
func trace(v string) int {
	pid, err := strconv.Atoi(v)
	if err == nil {
		err = syscall.PtraceAttach(pid)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "attach: %v\n", err)
		return 1
	}
	for said := false; ; said = true {
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, syscall.WALL, nil); err != nil || ws.Exited() || ws.Signaled() {
			return 0
		}
		if !said {
			fmt.Println("attached")
			// The process was left stopped (SIGSTOP) for the attach:
			// continue its other threads too.
			syscall.Kill(pid, syscall.SIGCONT)
		}
		sig := ws.StopSignal()
		if sig == syscall.SIGSTOP {
			sig = 0
		}
		syscall.PtraceCont(pid, int(sig))
	}
}

// asNobody returns the test binary, run as user 65534 from memory (it may
// not reach the file) with env, as a command.
func asNobody(t *testing.T, env string) *exec.Cmd {
	t.Helper()
	self, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	f, err := guardbin.LoadProgram(self)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return &exec.Cmd{Path: guardbin.ExecPath, Args: []string{"tenure-test"}, ExtraFiles: []*os.File{nil, nil, f},
		Env: []string{env}, SysProcAttr: &syscall.SysProcAttr{Credential: nobody}}
}

// awaitLine starts cmd and waits for it to say want on its standard
// output.
func awaitLine(t *testing.T, cmd *exec.Cmd, want string) {
	t.Helper()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	if line, _ := bufio.NewReader(out).ReadString('\n'); strings.TrimSpace(line) != want {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("user 65534, on a guard of its user stopped right after its execve: said %q, want %q: %s", line, want, stderr.String())
	}
}

// TestGuardReportTakenAtExec: a process of the guard's user (65534, not
// root) that takes the guard's report channel (pidfd_getfd of its file
// descriptor guard.ReportFD) while the guard, run from the loaded
// program, is stopped (ptrace) right after its execve, before its own
// PR_SET_DUMPABLE, cannot have tenure read a report of its own: written
// before the guard hands tenure its new report channel, or on a channel
// of its own handed over as the guard does, it gets the channel refused;
// written after, it is never read. (Needs root: the
// guard runs as user 65534.)
func TestGuardReportTakenAtExec(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatalf("needs root, to run the guard as user 65534")
	}
	for _, when := range []string{"now", "handoff", "later"} {
		t.Run(when, func(t *testing.T) {
			g, _, old := startStoppedChannels(t, "--", "/bin/true", "true")
			taker := asNobody(t, takeEnv+"="+strconv.Itoa(g)+" "+strconv.Itoa(guard.ReportFD)+" "+when)
			later, err := taker.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			awaitLine(t, taker, "taken")
			if when != "later" {
				later.Close()
				taker.Wait() // the forged report is written
			}
			if err := syscall.PtraceDetach(g); err != nil {
				t.Fatal(err)
			}
			rep, err := guard.AcceptReport(old, g)
			old.Close()
			switch {
			case when != "later" && err == nil:
				t.Errorf("the guard's report channel, on which user 65534 wrote (%s) before the guard's handover, was accepted; want it refused", when)
			case when == "later" && err != nil:
				t.Fatalf("the guard's handover, user 65534 holding its first report channel: %v; want it accepted", err)
			}
			if rep == nil {
				t.Logf("refused: %v", err)
				return
			}
			defer rep.Close()
			later.Close()
			taker.Wait() // the forged report is written, or failed to be
			rep.SetReadDeadline(time.Now().Add(time.Second))
			b := make([]byte, 256)
			if n, _ := rep.Read(b); n > 0 {
				t.Errorf("user 65534 took the report channel of a guard of its user stopped right after its execve (pidfd_getfd) and wrote on it (%s); tenure read %q", when, strings.TrimSpace(string(b[:n])))
			}
		})
	}
}

// TestTracedGuardRefused: a guard that a process of its user (65534, not
// root) attached to (ptrace) right after its execve, before its own
// PR_SET_DUMPABLE, and stays attached to (and so could make it say
// anything) is refused: tenure does not take its report channel, and says
// which process traces it. (Needs root: the guard runs as user 65534.)
func TestTracedGuardRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatalf("needs root, to run the guard as user 65534")
	}
	g, _, old := startStoppedChannels(t, "--", "/bin/true", "true")
	defer old.Close()
	// Leave the guard stopped, for the tracer to attach to it.
	if _, _, errno := syscall.Syscall6(syscall.SYS_PTRACE, syscall.PTRACE_DETACH, uintptr(g), 0, uintptr(syscall.SIGSTOP), 0, 0); errno != 0 {
		t.Fatal(errno)
	}
	tracer := asNobody(t, traceEnv+"="+strconv.Itoa(g))
	awaitLine(t, tracer, "attached")
	rep, err := guard.AcceptReport(old, g)
	if err == nil {
		rep.Close()
		t.Fatalf("the report channel of a guard traced by process %d (user 65534) was accepted; want it refused", tracer.Process.Pid)
	}
	t.Logf("refused: %v", err)
	if want := "traced by process " + strconv.Itoa(tracer.Process.Pid); !strings.Contains(err.Error(), want) {
		t.Errorf("refused: %v; want it to say %q", err, want)
	}
	// The guard refuses too: it does not wait for a lease while traced.
	var ws syscall.WaitStatus
	for began := time.Now(); time.Since(began) < 5*time.Second; time.Sleep(10 * time.Millisecond) {
		if pid, _ := syscall.Wait4(g, &ws, syscall.WNOHANG|syscall.WALL, nil); pid == g {
			if ws.ExitStatus() != 1 {
				t.Errorf("the traced guard ended with %v; want exit status 1", ws)
			}
			return
		}
	}
	t.Errorf("the traced guard still runs 5s after its start; want it to exit 1")
}
