package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tenure-dev/tenure/cmd/internal/guard"
)

// leadSettle is how long both have led when the idle window begins: their
// start-up is over by then.
const leadSettle = 2 * time.Second

// lineLeading is what the command of a leading process prints.
const lineLeading = "leading"

// leadFigures is what the side-by-side lead measured: each process's
// resident memory at the end of the idle window and its CPU time over it.
type leadFigures struct {
	tenure, guards, etcdctl procUsage
	window                  time.Duration // the idle window, as it lasted
	guardKind               string        // which program tenure's guard runs
}

// perMinute is CPU time d over the idle window, in milliseconds a minute.
func (l leadFigures) perMinute(d time.Duration) float64 {
	return ms(d) * float64(time.Minute) / float64(l.window)
}

// leader is a process that leads a key of its own and runs a command that
// says so, then sleeps.
type leader struct {
	*proc
	stderr bytes.Buffer // read once it has exited
	once   sync.Once
}

// startLeader starts path with args in a process group of its own.
func startLeader(path string, args []string) (*leader, error) {
	l := &leader{}
	cmd := exec.Command(path, args...)
	cmd.Env = footprintEnv()
	cmd.Stderr = &l.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p, err := startLines(cmd)
	if err != nil {
		return nil, err
	}
	l.proc = p
	return l, nil
}

// awaitLeading waits until l's command says it runs.
func (l *leader) awaitLeading(ctx context.Context, within time.Duration) error {
	if _, err := l.next(ctx, within, lineLeading); err != nil {
		l.stop(0)
		return fmt.Errorf("bench footprint: %s did not lead: %w\n%s", l.cmd.Path, err, l.stderr.String())
	}
	return nil
}

// stop sends sig to l (none when 0) and waits up to a few seconds for it
// to exit; then it kills l's process group, and reaps l. Only its first
// call does anything.
func (l *leader) stop(sig syscall.Signal) {
	l.once.Do(func() {
		if sig != 0 {
			_ = l.cmd.Process.Signal(sig)
			select {
			case <-l.done:
			case <-time.After(10 * time.Second):
			}
		}
		// l is not reaped yet: its process group is still its own.
		_ = syscall.Kill(-l.cmd.Process.Pid, syscall.SIGKILL)
		<-l.done
		_ = l.cmd.Wait()
	})
}

// leadSideBySide starts tenure run and etcdctl lock, each on a key of its
// own, waits until both run their command, lets them settle, and measures
// them over the idle window. tenure is stopped as a user stops it
// (SIGTERM); etcdctl lock is killed with its command (it forwards no
// signal).
func (f *footprinter) leadSideBySide(ctx context.Context) (leadFigures, error) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		return leadFigures{}, fmt.Errorf("bench footprint: the leading command needs sh: %w", err)
	}
	command := []string{sh, "-c", "echo " + lineLeading + " && exec sleep 3600"}
	t, err := startLeader(f.measured, f.tenureArgs("footprint-"+f.id+"-lead", command...))
	if err != nil {
		return leadFigures{}, err
	}
	defer t.stop(syscall.SIGTERM)
	e, err := startLeader(f.o.Etcdctl, f.etcdctlArgs("footprint-"+f.id+"-etcdctl-lead", command...))
	if err != nil {
		return leadFigures{}, err
	}
	defer e.stop(0)
	within := 30 * time.Second
	if err := errors.Join(t.awaitLeading(ctx, within), e.awaitLeading(ctx, within)); err != nil {
		return leadFigures{}, err
	}
	f.o.progress("footprint: both lead; measuring for %s", leadSettle+f.o.Idle)
	if err := sleep(ctx, leadSettle); err != nil {
		return leadFigures{}, err
	}
	return f.measureIdle(ctx, t.cmd.Process.Pid, e.cmd.Process.Pid)
}

// measureIdle reads the CPU time of tenure (pid tenure) and its guards and
// of etcdctl (pid etcdctl) before and after the idle window, and their
// resident memory at its end.
func (f *footprinter) measureIdle(ctx context.Context, tenure, etcdctl int) (leadFigures, error) {
	guards, err := childrenNamed(tenure, guard.Name)
	if err != nil || len(guards) == 0 {
		return leadFigures{}, fmt.Errorf("bench footprint: no %s process under tenure run (pid %d): %v", guard.Name, tenure, err)
	}
	pids := append([]int{tenure, etcdctl}, guards...)
	before, err := readAll(pids)
	if err != nil {
		return leadFigures{}, err
	}
	began := time.Now()
	if err := sleep(ctx, f.o.Idle); err != nil {
		return leadFigures{}, err
	}
	after, err := readAll(pids)
	if err != nil {
		return leadFigures{}, err
	}
	l := leadFigures{window: time.Since(began), guardKind: guardKind(guards[0])}
	l.tenure = after[0].since(before[0])
	l.etcdctl = after[1].since(before[1])
	for i := 2; i < len(pids); i++ {
		l.guards = l.guards.plus(after[i].since(before[i]))
	}
	return l, nil
}

// readAll reads the usage of each of pids.
func readAll(pids []int) ([]procUsage, error) {
	out := make([]procUsage, len(pids))
	for i, pid := range pids {
		u, err := readUsage(pid)
		if err != nil {
			return nil, fmt.Errorf("bench footprint: process %d, which leads, is gone: %w", pid, err)
		}
		out[i] = u
	}
	return out, nil
}

// guardKind says which program the guard process pid runs.
func guardKind(pid int) string {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	switch {
	case err != nil:
		return fmt.Sprintf("unknown (%v)", err)
	case strings.Contains(exe, "memfd:"):
		return "the program embedded in tenure, run from memory (a release build, scripts/build.sh: docs/build.md)"
	}
	return "tenure itself, re-executed (" + exe + "): a build without the guard program, as a plain go build makes (docs/build.md)"
}

// footprintEnv is this process's environment without tenure's and
// etcdctl's variables, which would override the flags given.
func footprintEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TENURE_") && !strings.HasPrefix(kv, "ETCDCTL_") {
			env = append(env, kv)
		}
	}
	return append(env, "ETCDCTL_API=3")
}
