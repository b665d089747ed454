package cli

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// child is a command tenure run started in a process group of its own.
type child struct {
	pid     int
	started time.Time
	done    chan struct{} // closed once the command has exited and been reaped
	state   *os.ProcessState
	err     error // from Wait, when it is not an exit status
}

// startChild starts the program at path with args (args[0] is the name it
// sees as its own) and env in a new process group whose
// id is its pid. On Linux the command is also killed (SIGKILL) if tenure
// dies, even by SIGKILL: see sysProcAttr.
func startChild(path string, args, env []string, stdin io.Reader, stdout, stderr io.Writer) (*child, error) {
	c := &child{done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		// The parent-death signal fires when the *thread* that started the
		// child exits, not the process. Keep this goroutine on its thread
		// from before the fork until the child has been reaped, so that the
		// runtime never retires the thread while the child lives.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		cmd := exec.Command(path, args[1:]...)
		cmd.Args[0] = args[0] // the name the user typed
		cmd.Env = env
		cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
		cmd.SysProcAttr = sysProcAttr()
		// Output copied through pipes (when stdout is not a file) must not
		// keep Wait waiting for descendants that still hold the pipe.
		cmd.WaitDelay = time.Second
		if err := cmd.Start(); err != nil {
			started <- err
			close(c.done)
			return
		}
		c.pid = cmd.Process.Pid
		c.started = time.Now()
		started <- nil
		err := cmd.Wait()
		c.state = cmd.ProcessState
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			c.err = err
		}
		close(c.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return c, nil
}

// exited reports whether the command has exited.
func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// exitCode is the command's exit code, 128+N when signal N ended it. Call
// it after done is closed.
func (c *child) exitCode() int {
	if c.state == nil {
		return ExitError
	}
	if ws, ok := c.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return exitSignalBase + int(ws.Signal())
	}
	return c.state.ExitCode()
}

// describe says how the command ended, for logs.
func (c *child) describe() string {
	if c.state == nil {
		if c.err != nil {
			return c.err.Error()
		}
		return "unknown"
	}
	return c.state.String()
}

// signal sends sig to the command's whole process group.
func (c *child) signal(sig syscall.Signal) error {
	return syscall.Kill(-c.pid, sig)
}

// groupAlive reports whether any live process of the command's group is
// left. (A process group id is not reused while any member exists, so this
// never finds another program's processes.) Zombies do not count: a
// descendant orphaned by the command may stay a zombie for good where
// nothing reaps orphans (PID 1 of many containers).
func (c *child) groupAlive() bool {
	if syscall.Kill(-c.pid, 0) != nil {
		return false
	}
	return groupHasLive(c.pid)
}

// stop ends the command's process group: sig now (unless sig is 0: already
// sent), then SIGKILL at killAt() unless the command and every process of
// its group have exited by then; killAt is evaluated again whenever ended
// is closed (the term ended, so its deadline may have come). A killAt in
// the past means SIGKILL at once. stop returns once the command has been
// reaped, and reports whether it sent SIGKILL.
func (c *child) stop(sig syscall.Signal, killAt func() time.Time, ended <-chan struct{}) (killed bool) {
	if time.Until(killAt()) > 0 {
		if sig != 0 {
			_ = c.signal(sig)
		}
		timer := time.NewTimer(time.Until(killAt()))
		defer timer.Stop()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
	wait:
		for !(c.exited() && !c.groupAlive()) {
			select {
			case <-timer.C:
				break wait
			case <-ended:
				ended = nil
				if time.Until(killAt()) <= 0 {
					break wait
				}
				timer.Reset(time.Until(killAt()))
			case <-c.done:
			case <-tick.C:
			}
		}
	}
	if !c.exited() || c.groupAlive() {
		_ = c.signal(syscall.SIGKILL)
		killed = true
	}
	<-c.done
	return killed
}
