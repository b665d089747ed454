package cli

import (
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"sync"

	"github.com/tenure-dev/tenure/cmd/internal/guard"
	"github.com/tenure-dev/tenure/cmd/internal/guard/guardbin"
)

// guardProgram is what tenure run executes as a guard: the guard's own
// program, embedded in the binary and run from memory (package guardbin),
// a few megabytes resident; or, in a binary built without it (a plain go
// build), the tenure binary itself with the hidden command guard.Command,
// which initialises everything tenure links. It is loaded at the first
// guard, once, and shared by every guard of the run.
type guardProgram struct {
	log  *slog.Logger
	once sync.Once
	exe  *os.File // the embedded program, in memory; nil: re-execute tenure
	self string   // the tenure binary, when exe is nil
	err  error    // why neither can run
}

// load finds the program, and says which it is at debug level (at warning
// level when an embedded program cannot be used). First it makes tenure
// not dumpable (see guard.Undumpable): tenure holds the other ends of
// every guard's channels.
func (p *guardProgram) load() {
	if p.err = guard.Undumpable(); p.err != nil {
		return
	}
	exe, err := guardbin.Load()
	switch {
	case err == nil:
		p.exe = exe
		p.log.Debug("guards run the program embedded in tenure, from memory", "program", guard.Name)
		return
	case errors.Is(err, guardbin.ErrAbsent):
		p.log.Debug("this tenure binary embeds no guard program (built without go generate, see docs/build.md): guards re-execute tenure", "err", err)
	default:
		p.log.Warn("the guard program embedded in tenure cannot run: guards re-execute tenure, which takes more memory", "err", err)
	}
	p.self, p.err = selfBinary()
}

// command returns a guard process that runs with args (its flags, then
// PATH ARGV0 [ARG...]), with ctl and rep as its file descriptors
// guard.ControlFD and guard.ReportFD, shown as guard.Name in ps.
func (p *guardProgram) command(args []string, ctl, rep *os.File) (*exec.Cmd, error) {
	p.once.Do(p.load)
	if p.err != nil {
		return nil, p.err
	}
	if p.exe != nil {
		return &exec.Cmd{
			Path:       guardbin.ExecPath,
			Args:       append([]string{guard.Name}, args...),
			ExtraFiles: []*os.File{ctl, rep, p.exe}, // guard.ControlFD, ReportFD, ExeFD
		}, nil
	}
	cmd := exec.Command(p.self, append([]string{guard.Command}, args...)...)
	cmd.Args[0] = guard.Name
	cmd.ExtraFiles = []*os.File{ctl, rep}
	return cmd, nil
}

// close releases the program in memory (a guard that runs it keeps it
// alive). No guard starts afterwards.
func (p *guardProgram) close() {
	p.once.Do(func() { p.err = errors.New("tenure run is over: no guard starts") })
	if p.exe != nil {
		p.exe.Close()
	}
}
