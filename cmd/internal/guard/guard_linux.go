//go:build linux

package guard

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tenure-dev/tenure/internal/boottime"
)

// poll bounds how long the guard sleeps between two readings of the boot
// clock: Go's timers run on the monotonic clock, which stops while the
// host is suspended, so a deadline that passed during a suspend is acted on
// within poll of the resume.
const poll = 100 * time.Millisecond

// settle is how often the guard looks at the tree while it waits for it
// to empty.
const settle = 10 * time.Millisecond

// Main runs the guard (see the package comment) with the arguments after
// Command and returns its exit code: 0 once it has reported, 1 when a
// process traces it, 2 on bad arguments.
func Main(args []string, stderr io.Writer) int {
	// The command's parent-death signal is tied to the thread that forks
	// it: keep the main goroutine on one thread for the guard's life.
	runtime.LockOSThread()
	nameSelf()
	fs := flag.NewFlagSet(Command, flag.ContinueOnError)
	fs.SetOutput(stderr)
	grace := fs.Duration("kill-grace", 2*time.Second, "after SIGTERM, how long before SIGKILL (never past the deadline)")
	lease := fs.String("lease-file", "", "the lease file, in a directory of its own that the guard removes at its end (default: one in a new temporary directory)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() < 2 {
		fmt.Fprintf(stderr, "tenure %s: want PATH ARGV0 [ARG...] after the flags\n", Command)
		return 2
	}
	syscall.CloseOnExec(ControlFD)
	syscall.CloseOnExec(ReportFD)
	// ExeFD is the guard's program when it runs from memory; otherwise it
	// is unused or one of Go's own descriptors, close-on-exec already.
	syscall.CloseOnExec(ExeFD)
	ctl, rep := os.NewFile(ControlFD, "control"), os.NewFile(ReportFD, "report")
	g := &guard{enc: json.NewEncoder(rep), log: stderr}
	err := g.secure(rep)
	if err == nil {
		err = g.run(ctl, *grace, *lease, fs.Arg(0), fs.Args()[1:])
	}
	if err != nil {
		fmt.Fprintf(stderr, "tenure guard: %v\n", err)
		_ = g.enc.Encode(Report{Err: err.Error(), Code: 126})
	}
	if errors.Is(err, errTraced) {
		return 1
	}
	return 0
}

// secure makes the guard a subreaper and not dumpable, checks that no
// process traces it (one that attached in the instant before Undumpable
// would stay attached), and hands tenure a report channel made from then
// on in place of rep (see handOver). Until then, g reports on rep, which
// tenure takes for a failure.
func (g *guard) secure(rep *os.File) error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("PR_SET_CHILD_SUBREAPER: %w", err)
	}
	if err := Undumpable(); err != nil {
		return err
	}
	if err := notTraced(0); err != nil {
		return err
	}
	rep, err := handOver(rep)
	if err != nil {
		return err
	}
	g.enc = json.NewEncoder(rep)
	return nil
}

// guard is the running guard process.
type guard struct {
	enc  *json.Encoder
	log  io.Writer
	st   state
	tree *procTree
	msgs <-chan Message
	sigs chan os.Signal

	lastSaid time.Time // when survivors were last named
}

// run starts the command once the first lease arrives, enforces the
// deadlines, and reports how the command ended.
func (g *guard) run(ctl io.Reader, grace time.Duration, lease, path string, argv []string) error {
	if err := checkProcVisible(); err != nil {
		return err
	}
	offset, err := BootOffset() // the lease file says it: see Lease.Now
	if err != nil {
		return err
	}
	// tenure's deadlines are on the boot clock: a guard that can only read
	// one of its own (boottime.Now's fallback) would kill late.
	if _, err := boottime.Read(); err != nil {
		return err
	}
	// Signals: see onSignal.
	g.sigs = make(chan os.Signal, 16)
	signal.Notify(g.sigs, syscall.SIGINT, syscall.SIGHUP, syscall.SIGTSTP, syscall.SIGQUIT,
		syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGTERM, syscall.SIGCHLD)
	g.msgs = readMessages(ctl)
	if lease == "" {
		dir, err := os.MkdirTemp("", "tenure-lease-")
		if err != nil {
			return err
		}
		lease = filepath.Join(dir, "lease.json")
	}
	defer os.RemoveAll(filepath.Dir(lease))
	g.tree = &procTree{self: os.Getpid(), selfPgid: syscall.Getpgrp()}
	g.st = state{clock: boottime.Now, grace: grace, tree: g.tree, path: lease, offset: offset}
	first, ok := <-g.msgs
	for ok && first.Op != OpLease {
		first, ok = <-g.msgs
	}
	if !ok {
		return nil // tenure went away before the term began
	}
	g.st.handle(first)
	g.drain() // a renewal may have come while the guard started
	if why := g.st.tooLate(); why != "" {
		// The term is over (or tenure is gone): the command never starts.
		fmt.Fprintf(g.log, "tenure guard: command not started: %s\n", why)
		return g.enc.Encode(Report{Err: "not started: " + why, Expired: true})
	}
	pid, err := startCommand(path, argv, g.st.path, first.Env)
	if err != nil {
		code := 126
		if errors.Is(err, syscall.ENOENT) {
			code = 127
		}
		return g.enc.Encode(Report{Err: err.Error(), Code: code})
	}
	return g.supervise(pid)
}

// supervise enforces the term on the started command, pid, until its whole
// tree is gone, then reports how it ended.
func (g *guard) supervise(pid int) error {
	g.tree.main = pid
	if err := g.enc.Encode(Report{Pid: pid}); err != nil {
		g.st.expire() // tenure cannot hear from us: nobody would stop it
	}
	g.loop()
	g.st.endLease() // the tree is gone: the file says so before the report
	r := g.tree.report(g.st.killed, g.st.expired)
	r.Overdue = g.st.overdueEnd()
	if err := g.enc.Encode(r); err != nil && g.msgs != nil {
		return err
	}
	// Keep the lease file (which says the term is over) until tenure has
	// read the report and closes the control channel, or dies.
	if g.msgs != nil {
		for range g.msgs {
		}
	}
	return nil
}

// loop enforces the deadlines until the command and its whole tree are
// gone (see procTree.gone). Once the tree is being killed, it kills the
// survivors again and again, however long that takes, and says which
// they are.
func (g *guard) loop() {
	var killing time.Time // when the tree began to be killed
	for {
		g.st.tick()
		if g.tree.gone() && g.tree.exited {
			return
		}
		wait := poll
		switch {
		case g.st.killed:
			if killing.IsZero() {
				killing = time.Now()
			}
			g.tree.kill()
			g.survivors(killing)
			wait = settle
			if time.Since(killing) > time.Second {
				wait = poll // a survivor that takes this long: no need to spin
			}
		case g.tree.exited && g.st.killAt == 0: // the command exited, leftovers did not
			g.st.end(syscall.SIGTERM, g.st.clock().Add(g.st.grace))
			wait = settle
		case g.tree.exited || g.st.killAt != 0:
			wait = settle
		}
		g.await(g.st.wake(wait))
	}
}

// await waits up to d for a message from tenure or a signal, and applies it.
func (g *guard) await(d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case m, ok := <-g.msgs:
		if !ok { // tenure is gone: nobody renews, nobody decides
			g.msgs = nil
			g.st.expire()
		} else {
			g.st.handle(m)
		}
	case s := <-g.sigs:
		g.onSignal(s)
	case <-timer.C:
	}
}

// onSignal applies a signal the guard got. Terminal signals reach it with
// tenure (same process group), and tenure decides what they mean. SIGTERM
// ends the term as tenure's stop does: the tree gets SIGTERM and the kill
// grace before SIGKILL (never past the deadline). A SIGTERM to tenure's
// whole process group (timeout, kill -- -PGID, systemd, supervisord)
// reaches the guard with the command, and must not cut that grace short.
// Before the first lease, no command runs: the guard just ends.
func (g *guard) onSignal(s os.Signal) {
	if s != syscall.SIGTERM {
		return
	}
	if !g.st.leased {
		g.st.killNow()
		return
	}
	g.st.end(syscall.SIGTERM, g.st.clock().Add(g.st.grace))
}

// survivors says, a second after the tree began to be killed and every
// survivorEvery after that, which processes of the tree are still alive,
// and why when it can tell.
func (g *guard) survivors(killing time.Time) {
	since := time.Since(killing)
	if since < time.Second || g.lastSaid.After(time.Now().Add(-survivorEvery)) || g.tree.gone() {
		return
	}
	g.lastSaid = time.Now()
	left := g.tree.live()
	var b strings.Builder
	if len(left) == 0 {
		b.WriteString("; none that /proc shows alive: processes that fork and exit faster than the guard reads /proc")
	}
	for _, p := range left {
		if p == blind {
			b.WriteString("; /proc does not show the guard itself: it cannot tell which")
			continue
		}
		fmt.Fprintf(&b, "; pid %d (state %c)", p.Pid, p.State)
		if p.Zombie() {
			b.WriteString(" with threads running")
		}
		if err := syscall.Kill(p.Pid, 0); err != nil {
			fmt.Fprintf(&b, ": %v", err)
		}
	}
	fmt.Fprintf(g.log, "tenure guard: process(es) of the command's tree still alive %s after SIGKILL, killed again until none is left%s\n",
		since.Round(time.Second), b.String())
}

// survivorEvery is how often the guard repeats which processes survive.
const survivorEvery = 10 * time.Second

// drain applies the messages already waiting.
func (g *guard) drain() {
	for {
		select {
		case m, ok := <-g.msgs:
			if !ok {
				g.msgs = nil
				g.st.expire()
				return
			}
			g.st.handle(m)
		default:
			return
		}
	}
}

// readMessages decodes messages from r until it fails or ends, then closes
// the channel.
func readMessages(r io.Reader) <-chan Message {
	ch := make(chan Message, 16)
	go func() {
		defer close(ch)
		dec := json.NewDecoder(r)
		for {
			var m Message
			if err := dec.Decode(&m); err != nil {
				return
			}
			ch <- m
		}
	}()
	return ch
}

// Undumpable makes the calling process not dumpable (PR_SET_DUMPABLE 0),
// so that a process of the command's tree running as the same user (not
// root) can neither ptrace it nor take its file descriptors (pidfd_getfd,
// or open through /proc/PID/fd those that are not sockets). Both ends of a
// guard's channels (see Channel) need it: the guard's, and tenure run's,
// which writes the renewals and reads the report. Through either, the tree
// could forge renewals (and run past its term, the lease file saying it is
// held) or a report (and have tenure hand the lease over while it runs).
func Undumpable() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("PR_SET_DUMPABLE: %w", err)
	}
	return nil
}

// startCommand starts the command in a process group of its own, with the
// guard's environment plus extra and standard files, TENURE_LEASE_FILE set
// to lease, and SIGKILL as its parent-death signal.
func startCommand(path string, argv []string, lease string, extra []string) (int, error) {
	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TENURE_LEASE_FILE=") {
			env = append(env, kv)
		}
	}
	env = append(append(env, extra...), "TENURE_LEASE_FILE="+lease)
	return syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env:   env,
		Files: []uintptr{0, 1, 2},
		Sys:   &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	})
}
