package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/guard"
	"github.com/tenure-dev/tenure/internal/boottime"
)

// child is a command tenure run started under a guard process (package
// guard; see guardProgram), which starts the command, feeds its lease file
// and kills its whole process tree at the last deadline tenure sent, or at
// once if tenure goes away.
type child struct {
	started  chan struct{} // closed once the guard has reported the start
	startErr error         // why the command did not start; set before started closes
	pid      int           // the command's (and its process group's); set before started closes
	began    time.Time
	done     chan struct{} // closed once the guard has reported and exited

	lease string // the lease file, in a directory of its own

	mu     sync.Mutex
	enc    *json.Encoder // to the guard; nil once closed
	ctl    *os.File
	told   boottime.Instant // the latest deadline sent to the guard
	report guard.Report
	err    error // the guard failed: no report
	// leaseErr: the lease file may still say the lease is held after the
	// guard's end (see guard.EndLease).
	leaseErr error
}

// startChild starts a guard (prog) that will start the program at path
// with args (args[0] is the name it sees as its own) and env once it is
// sent the first lease (with the term's variables). grace is --kill-grace.
// Call awaitStart, after that first lease, to learn whether the command
// started.
func startChild(prog *guardProgram, path string, args, env []string, stdin io.Reader, stdout, stderr io.Writer,
	grace time.Duration) (*child, error) {
	dir, err := os.MkdirTemp("", "tenure-lease-")
	if err != nil {
		return nil, fmt.Errorf("start the guard: %w", err)
	}
	// ctlW and repR are tenure's ends, ctlR and repW the guard's.
	ctlW, ctlR, err := guard.Channel()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	repR, repW, err := guard.Channel()
	if err != nil {
		os.RemoveAll(dir)
		ctlR.Close()
		ctlW.Close()
		return nil, err
	}
	lease := filepath.Join(dir, "lease.json")
	cmd, err := prog.command(append([]string{"--kill-grace", grace.String(), "--lease-file", lease, "--", path}, args...), ctlR, repW)
	if err == nil {
		cmd.Env = env
		cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
		// Output copied through pipes (when stdout is not a file) must not
		// keep Wait waiting for descendants that still hold the pipe.
		cmd.WaitDelay = time.Second
		err = cmd.Start()
	}
	ctlR.Close()
	repW.Close()
	if err != nil {
		os.RemoveAll(dir)
		ctlW.Close()
		repR.Close()
		return nil, fmt.Errorf("start the guard: %w", err)
	}
	c := &child{done: make(chan struct{}), started: make(chan struct{}), ctl: ctlW, enc: json.NewEncoder(ctlW), lease: lease}
	go c.watch(cmd, repR)
	return c, nil
}

// startError is the exit error of a command that could not be started:
// 127 when it was not found, 126 otherwise (not executable, a directory),
// as shells do.
func startError(name string, err error) error {
	code := ExitCannotRun
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		code = ExitNotFound
	}
	return &exitError{code: code, err: fmt.Errorf("command %q: %w", name, err)}
}

// awaitStart waits for the guard to start the command and returns the
// reason it could not.
func (c *child) awaitStart() error {
	<-c.started
	return c.startErr
}

// selfBinary is the tenure binary, to re-execute as the guard when it
// embeds no guard program: /proc/self/exe on
// Linux, which still works when the file was replaced or removed (an
// upgrade while tenure runs).
func selfBinary() (string, error) {
	if _, err := os.Stat("/proc/self/exe"); err == nil {
		return "/proc/self/exe", nil
	}
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find the tenure binary to run the guard: %w", err)
	}
	return self, nil
}

// errTooLate: the guard did not start the command because the term's
// deadline had passed (or the term had ended) when it got to it. The term
// is over; the command was never started.
var errTooLate = errors.New("the term was over before the command started")

// startFailure is the error of a guard that did not start the command.
func startFailure(r guard.Report, err error) error {
	switch {
	case err != nil:
		return fmt.Errorf("the guard failed before starting the command: %w", err)
	case r.Expired:
		return fmt.Errorf("%w: %s", errTooLate, r.Err)
	case r.Code == ExitNotFound:
		return fmt.Errorf("%s: %w", r.Err, fs.ErrNotExist)
	default:
		return errors.New(r.Err)
	}
}

// watch takes the report channel the guard hands over on old (see
// guard.AcceptReport) and reads the guard's reports from it: the
// command's pid (or why it did not start), then how it ended; then it
// waits for the guard to exit. A guard whose handover is refused has
// failed: the command does not start.
func (c *child) watch(cmd *exec.Cmd, old *os.File) {
	var r guard.Report
	rep, err := guard.AcceptReport(old, cmd.Process.Pid)
	old.Close()
	var dec *json.Decoder
	if err == nil {
		defer rep.Close()
		dec = json.NewDecoder(rep)
		err = dec.Decode(&r)
	}
	if err != nil || r.Pid == 0 {
		c.startErr = startFailure(r, err)
		close(c.started)
		c.close()
		c.ended(r, err, cmd.Wait())
		return
	}
	c.pid, c.began = r.Pid, time.Now()
	close(c.started)
	err = dec.Decode(&r)
	if err == nil && !r.Exited {
		err = fmt.Errorf("guard report %+v: want exited", r)
	}
	rep.Close()
	c.close()
	c.ended(r, err, cmd.Wait())
}

// ended records how the guard ended, once it has exited: its report r,
// or err, why there is none (werr, its exit). Whatever the lease file
// still says, it no longer says the lease is held, or leaseErr says why
// it may (see guard.EndLease).
func (c *child) ended(r guard.Report, err, werr error) {
	lerr := guard.EndLease(c.lease, boottime.Now())
	c.mu.Lock()
	c.report, c.leaseErr = r, lerr
	if err != nil {
		c.err = fmt.Errorf("%w: %w (%v)", errGuardDied, err, werr)
	}
	c.mu.Unlock()
	close(c.done)
}

// errGuardDied: the guard ended without its report (killed by a signal,
// say): processes of the command's tree may outlive it.
var errGuardDied = errors.New("the guard ended without reporting how the command ended")

// removeLease removes the lease file and its directory (the guard removes
// them at its end, unless it dies first).
func (c *child) removeLease() { os.RemoveAll(filepath.Dir(c.lease)) }

// died is why the guard ended without its report, or nil. Call it after
// done is closed.
func (c *child) died() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// stillTold says why, after the guard's end, what the command was told may
// still say the lease is held (the guard died, and processes of the tree
// may outlive it with their fencing token; or the lease file could not be
// marked ended), or returns nil. Call it after done is closed.
func (c *child) stillTold() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return errors.Join(c.err, c.leaseErr)
}

// toldUntil is the latest deadline sent to the guard.
func (c *child) toldUntil() boottime.Instant {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.told
}

// send gives the guard m; once the guard is gone it does nothing.
func (c *child) send(m guard.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.enc != nil {
		if m.Op == guard.OpLease && m.Lease != nil {
			c.told = max(c.told, m.Lease.Deadline)
		}
		_ = c.enc.Encode(m)
	}
}

// close closes the control channel: the guard kills what is left at once.
func (c *child) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.enc != nil {
		c.enc = nil
		c.ctl.Close()
	}
}

// exited reports whether the command and its tree are gone.
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
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return ExitSoftware // the guard failed: tenure's failure, not the command's
	}
	return c.report.Code
}

// describe says how the command ended, for logs.
func (c *child) describe() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err.Error()
	}
	return c.report.Status
}

// killed reports whether the guard ended the command with SIGKILL. Call
// it after done is closed.
func (c *child) killed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.report.Killed
}

// expired reports whether the guard killed the command on its own, at the
// deadline it last heard of. Call it after done is closed.
func (c *child) expired() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.report.Expired
}

// overdue reports whether the guard sent the command SIGTERM because a
// renewal was overdue. Call it after done is closed.
func (c *child) overdue() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.report.Overdue
}

// signal forwards sig to every process of the command's tree.
func (c *child) signal(sig syscall.Signal) {
	c.send(guard.Message{Op: guard.OpSignal, Signal: sig})
}

// stop ends the term for the command: sig now (unless 0: forwarded
// already), SIGKILL after --kill-grace but never past the deadline. It
// returns once the command's whole tree is gone, and reports whether the
// guard sent SIGKILL.
func (c *child) stop(sig syscall.Signal) bool {
	c.send(guard.Message{Op: guard.OpEnd, Signal: sig})
	<-c.done
	return c.killed()
}
