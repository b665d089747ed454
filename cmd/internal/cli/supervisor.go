package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/cmd/internal/guard"
	"github.com/tenure-dev/tenure/internal/termctl"
	"github.com/tenure-dev/tenure/partition"
)

// supervisor is the one engine of tenure run, for one key (keyRun) and for
// the partitions of a group (groupRun): it runs each command under a guard
// (command.go), handles the signals tenure gets, and decides the exit code.
// The key or the group decides when a command starts and when its term
// ends.
type supervisor struct {
	f              *runFlags
	log            *slog.Logger
	argv           []string // the command, as given
	path           string   // the command's program
	env            []string // the command's environment (without tenure's variables)
	stdin          io.Reader
	stdout, stderr io.Writer
	stall          stallPlan
	guards         *guardProgram // what each guard runs
	// group: the commands of a partition group. Their exit codes are never
	// tenure's, and SIGHUP is forwarded, never a reason to stop.
	group  bool
	cancel context.CancelFunc // stops tenure: the campaign or the group ends

	mu sync.Mutex
	st supState
}

// supState is what the supervisor keeps. Each field is written in one
// place: running by setRunning, spare by swapSpare, signal by onSignal, end
// by finish.
type supState struct {
	running map[*child]bool // the guards of the commands that run now
	spare   *child          // a guard started ahead of the next term
	signal  syscall.Signal  // the signal that stops tenure (0: none yet)
	end     outcome         // how tenure exits, as it stands
}

// An outcome is how tenure run exits: err for Main (nil: 0), and its rank.
// A higher rank wins: a permission the coordinator refused over a
// command's own end over a lost leadership (--exit-on-loss) over
// --wait-timeout over a signal over an error.
type outcome struct {
	rank rank
	err  error
}

type rank int

const (
	byError   rank = iota + 1 // the elector or the group failed
	bySignal                  // tenure got a stopping signal
	byWait                    // --wait-timeout passed
	byLoss                    // leadership lost, with --exit-on-loss
	byCommand                 // the command's own end, or why it could not start
	byDenial                  // the coordinator refused a call for want of a permission
)

// finish records o as how tenure exits, unless an outcome of its rank or
// a higher one is recorded already, and reports whether it did.
func (s *supervisor) finish(o outcome) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o.rank > s.st.end.rank {
		s.st.end = o
		return true
	}
	return false
}

// denied ends tenure with ExitNoPerm, err its message, when the
// coordinator refused a call tenure run cannot do without for want of a
// permission (see stopOnRefusal): waiting does not grant one, and
// campaigning would only repeat the refusal. A command that runs is
// stopped first, as when tenure is stopping.
func (s *supervisor) denied(err error) {
	msg := fmt.Errorf("permission denied, which waiting does not grant: %w", err)
	if s.finish(outcome{byDenial, &exitError{code: ExitNoPerm, err: msg}}) {
		s.log.Error("permission denied; stopping", "err", err)
	}
	s.cancel()
}

// result is the error tenure run returns: the outcome, or runErr (the
// elector's or the group's) when there is none.
func (s *supervisor) result(runErr error) error {
	if runErr != nil && !isCanceled(runErr) {
		s.finish(outcome{byError, runErr})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.end.err
}

// codeOutcome is the outcome of a command that exited with code.
func codeOutcome(code int) outcome {
	if code == 0 {
		return outcome{byCommand, nil}
	}
	return outcome{byCommand, &exitError{code: code}}
}

// stopping reports whether tenure is ending: a stopping signal came, or
// the command's end decided the exit code. No command starts then.
func (s *supervisor) stopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.signal != 0 || s.st.end.rank >= byLoss
}

// termEnded handles the end of a term other than by its release (kind is
// not Elected or Resigned): with --exit-on-loss, tenure exits 75 once the
// command has stopped; otherwise it campaigns again (the elector or the
// group does).
func (s *supervisor) termEnded(t tenure.Transition) {
	if t.Kind == tenure.Elected || t.Kind == tenure.Resigned {
		return
	}
	if !s.f.exitOnLoss {
		if !s.group {
			s.log.Info("campaigning again; a lease left at the coordinator expires on its own", "key", t.Key)
		}
		return
	}
	s.log.Info("leadership lost; exiting once the command has stopped (--exit-on-loss)", "key", t.Key, "token", t.Token)
	err := fmt.Errorf("leadership of %q lost (%s; token %d): exiting (--exit-on-loss)", t.Key, termctl.Reason(t.Kind), t.Token)
	s.finish(outcome{byLoss, &exitError{code: ExitLost, err: err}})
	s.cancel()
}

// signalled reports whether tenure got a stopping signal (which it
// forwarded to every command then running).
func (s *supervisor) signalled() syscall.Signal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.signal
}

// setRunning records that c's command runs (on) or has ended. A command
// is not recorded once tenure is stopping: it reports false then.
func (s *supervisor) setRunning(c *child, on bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !on {
		delete(s.st.running, c)
		return true
	}
	if s.st.signal != 0 || s.st.end.rank >= byCommand {
		return false
	}
	if s.st.running == nil {
		s.st.running = map[*child]bool{}
	}
	s.st.running[c] = true
	return true
}

// each sends m to the guard of every running command and returns how many
// there are.
func (s *supervisor) each(m guard.Message) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.st.running {
		c.send(m)
	}
	return len(s.st.running)
}

// parentGrace is how long tenure run waits, when its context ends, for the
// signal that ended it to arrive through its own handler.
const parentGrace = 100 * time.Millisecond

// catchSignals handles SIGINT, SIGTERM, SIGHUP, SIGTSTP and SIGCONT (see
// onSignal) until the returned stop is called, and stops tenure as SIGTERM
// would when parent ends without one of them.
func (s *supervisor) catchSignals(ctx, parent context.Context) (stop func()) {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGTSTP, syscall.SIGCONT)
	done, quit := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			case sig := <-sigs:
				s.onSignal(sig.(syscall.Signal))
			}
		}
	}()
	stopParent := context.AfterFunc(parent, func() {
		select {
		case <-ctx.Done():
			return
		case <-time.After(parentGrace):
		}
		if s.signalled() == 0 {
			s.onSignal(syscall.SIGTERM)
		}
	})
	return func() {
		stopParent()
		signal.Stop(sigs)
		close(quit)
		<-done
	}
}

// onSignal handles a signal tenure got. SIGTSTP stops every command's tree
// (through its guard), then tenure itself; SIGCONT continues the trees
// whose deadline has not passed (the guards kill the others). Other
// signals are forwarded to every command's tree. SIGINT and SIGTERM also
// stop tenure, after the commands have exited; so does SIGHUP when no
// command runs, for one key.
func (s *supervisor) onSignal(sig syscall.Signal) {
	switch sig {
	case syscall.SIGTSTP:
		s.each(guard.Message{Op: guard.OpStop})
		s.log.Info("suspending (SIGTSTP): the command is stopped; it is killed if its deadline passes before SIGCONT")
		_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
		return
	case syscall.SIGCONT:
		if s.each(guard.Message{Op: guard.OpCont}) > 0 {
			s.log.Info("continued (SIGCONT): the command continues if its deadline has not passed")
		}
		return
	}
	s.mu.Lock()
	n := len(s.st.running)
	stop := sig != syscall.SIGHUP || n == 0 && !s.group
	if stop {
		s.st.signal = sig // from here on no command starts
	}
	s.mu.Unlock()
	if s.each(guard.Message{Op: guard.OpSignal, Signal: sig}) > 0 {
		s.log.Info("forwarding signal to the command", "signal", sig.String(), "commands", n)
	} else {
		s.log.Info("signal received; stopping", "signal", sig.String())
	}
	if stop {
		s.finish(outcome{bySignal, &exitError{code: exitSignalBase + int(sig)}})
		s.cancel()
	}
}

// newSupervisor makes the supervisor of tenure run with the command args
// (its program at path) and stall, the timing of SIGTERM when renewals
// stall (warned about at start when --kill-grace cannot fit). Its context
// ends when tenure stops: tenure run handles SIGINT and SIGTERM itself
// (forward, then stop), so the command's context, which the same signals
// cancel, must not end it before the handler has seen them (see
// catchSignals). The caller calls the returned cancel, which also releases
// the guard program (s.cancel only stops tenure).
func newSupervisor(cmd *cobra.Command, g *globalFlags, f *runFlags, args []string, path string,
	stall stallPlan) (context.Context, context.CancelFunc, *supervisor, error) {
	log, err := g.logger(cmd.ErrOrStderr(), f.json)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(cmd.Context()))
	s := &supervisor{
		f: f, log: log, argv: args, path: path, env: commandEnv(cmd.Root(), os.Environ()),
		stdout: cmd.OutOrStdout(), stderr: cmd.ErrOrStderr(), stall: stall, group: stall.group, cancel: cancel,
		guards: &guardProgram{log: log},
	}
	if w := stall.warning(); w != "" && cmd.Flags().Changed("kill-grace") {
		log.Warn(w)
	} else if w != "" { // the default grace, which the user did not ask for
		log.Info(w)
	}
	return ctx, func() { cancel(); s.guards.close() }, s, nil
}

// libraryLogger is the logger of the elector or the group: their own
// records repeat what the transitions say, so only their warnings (failed
// and overdue renewals) show, unless debugging.
func (s *supervisor) libraryLogger(ctx context.Context, cmd *cobra.Command, g *globalFlags) (*slog.Logger, error) {
	if s.log.Enabled(ctx, slog.LevelDebug) {
		return s.log, nil
	}
	return g.loggerAtLeast(cmd.ErrOrStderr(), s.f.json, slog.LevelWarn)
}

// connect catches signals (from here on tenure decides what a signal
// means; see catchSignals) and opens the coordinator. When that fails, it
// returns how tenure exits: 69 (or the signal that came meanwhile). stop
// closes the coordinator and stops catching signals.
func (s *supervisor) connect(ctx context.Context, cmd *cobra.Command, g *globalFlags) (partition.Coordinator, func(), error) {
	stopSignals := s.catchSignals(ctx, cmd.Context())
	coord, err := openCoordinator(ctx, &g.coord, s.log)
	if err != nil {
		s.finish(outcome{byError, unavailable(err)})
		stopSignals()
		return nil, nil, s.result(nil)
	}
	return coord, func() { coord.Close(); stopSignals() }, nil
}
