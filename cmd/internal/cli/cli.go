// Package cli implements tenure's command line. It is the only package that
// knows every backend.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tenure-dev/tenure/cmd/internal/guard"
	"github.com/tenure-dev/tenure/partition"
)

// Exit codes of the tenure command (docs/exit-codes.md). tenure run also
// exits with its command's own exit code (128+N when a signal N ended the
// command). tenure's own runtime failures have codes from sysexits.h that
// a command's common codes (1, 2, 126, 127, 128+N) never collide with.
const (
	ExitOK       = 0 // success
	ExitError    = 1 // a "no": the lease is not held (lease check), a release refused, a safety violation found (verify, bench)
	ExitUsage    = 2 // bad flags or arguments
	ExitNotReady = 3 // tenure run: --wait-timeout passed without leading
	ExitNoLeader = 4 // tenure status --exit-code: nobody leads
	// ExitUnavailable (EX_UNAVAILABLE) is tenure's exit code when the
	// coordinator could not be reached, or a port to listen on is in use:
	// try again later. See exit.go for the other causes.
	ExitUnavailable = 69
	// ExitSoftware (EX_SOFTWARE) is tenure's exit code when it failed
	// otherwise: the guard failed, a coordinator broke the contract, …
	ExitSoftware   = 70
	ExitCannotRun  = 126 // tenure run: the command was found but could not be started
	ExitNotFound   = 127 // tenure run: the command was not found
	exitSignalBase = 128 // 128+N: ended by signal N (the command's, or tenure's own)
)

// ExitInconclusive is tenure verify's exit code when the run could not be
// done or proved nothing: no leader was ever elected, or the register
// accepted fewer than chaos.MinAcceptedWrites writes.
const ExitInconclusive = 5

// exitError carries an exit code out of a command. A nil err exits quietly.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit code %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// usageError marks an error in flags or arguments (exit code 2).
func usageError(format string, args ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, args...)}
}

// Main runs the tenure command line with args and returns the exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == guard.Command {
		return guard.Main(args[1:], stderr)
	}
	root := newRootCommand()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	var err error
	// cobra adds its help and completion commands only when it executes:
	// add them now, so that the lookup below knows them.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd(args...)
	shellComp := len(args) > 0 && (args[0] == cobra.ShellCompRequestCmd || args[0] == cobra.ShellCompNoDescRequestCmd)
	if _, _, ferr := root.Find(args); ferr != nil && !shellComp {
		// cobra's command lookup fails only on an unknown command.
		err = &exitError{code: ExitUsage, err: fmt.Errorf("%w (see 'tenure --help')", ferr)}
	} else {
		err = root.ExecuteContext(ctx)
	}
	if err == nil {
		return ExitOK
	}
	code := runtimeCode(err)
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
		if ee.err == nil || code == ExitOK {
			return code
		}
	} else if sig := signalCode(ctx); sig != 0 {
		return sig // interrupted (Ctrl-C): what failed failed for that
	}
	if msg := errorMessage(err); msg != "" {
		fmt.Fprintln(stderr, "tenure:", msg)
	}
	return code
}

// globalFlags are the flags every command accepts.
type globalFlags struct {
	coord     coordinatorFlags
	logLevel  string
	logFormat string
}

// connect checks the coordinator flags of cmd, makes a text logger on cmd's
// stderr and opens the coordinator they name. The caller closes it.
func (g *globalFlags) connect(cmd *cobra.Command) (partition.Coordinator, *slog.Logger, error) {
	if err := g.coord.check(cmd.Flags()); err != nil {
		return nil, nil, err
	}
	log, err := g.logger(cmd.ErrOrStderr(), false)
	if err != nil {
		return nil, nil, err
	}
	c, err := openCoordinator(cmd.Context(), &g.coord, log)
	if err != nil {
		return nil, nil, unavailable(err)
	}
	return c, log, nil
}

// logger returns a logger writing to w at --log-level, as text or, with
// asJSON or --log-format json, as JSON lines.
func (g *globalFlags) logger(w io.Writer, asJSON bool) (*slog.Logger, error) {
	return g.loggerAtLeast(w, asJSON, slog.LevelDebug)
}

// loggerAtLeast is logger, but drops records below least whatever
// --log-level says.
func (g *globalFlags) loggerAtLeast(w io.Writer, asJSON bool, least slog.Level) (*slog.Logger, error) {
	level, err := g.level()
	if err != nil {
		return nil, err
	}
	opts := &slog.HandlerOptions{Level: max(level, least)}
	switch g.logFormat {
	case "text":
	case "json":
		asJSON = true
	default:
		return nil, usageError("--log-format %q: want text or json", g.logFormat)
	}
	if asJSON {
		opts.ReplaceAttr = durationsInMs
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return slog.New(slog.NewTextHandler(w, opts)), nil
}

// durationsInMs writes a duration attribute of a JSON log as integer
// milliseconds under its key with "_ms" added ("ttl" becomes "ttl_ms"), as
// every other JSON output of tenure does (docs/json.md).
func durationsInMs(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.Int64(a.Key+"_ms", a.Value.Duration().Milliseconds())
	}
	return a
}

// level is --log-level.
func (g *globalFlags) level() (slog.Level, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(g.logLevel)); err != nil {
		return 0, usageError("--log-level %q: want debug, info, warn or error", g.logLevel)
	}
	return level, nil
}

// newRootCommand builds the tenure command and its subcommands.
func newRootCommand() *cobra.Command {
	var g globalFlags
	root := &cobra.Command{
		Use:               "tenure",
		Short:             "Leader election that stays safe when a leader goes stale",
		Long:              rootLong,
		Example:           rootExample,
		SilenceUsage:      true,
		SilenceErrors:     true,
		PersistentPreRunE: g.preRun,
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &exitError{code: ExitUsage, err: fmt.Errorf("%w%s (see '%s --help')", err, didYouMean(cmd, err), cmd.CommandPath())}
	})
	g.coord.register(root.PersistentFlags())
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", "info", "least severe log messages written to stderr: debug, info, warn or error")
	root.PersistentFlags().StringVar(&g.logFormat, "log-format", "text", "log records on stderr as text (key=value) or json (one object per line)")
	addCommands(root, &g)
	root.Version = readVersion().String()
	root.SetVersionTemplate("tenure {{.Version}}\n")
	root.SetHelpFunc(helpWithSections(root.HelpFunc()))
	return root
}

// rootLong is the help text of the tenure command.
const rootLong = `tenure elects one leader per key through a consensus-backed coordinator
(etcd, PostgreSQL or Kubernetes). Every grant carries a fencing token that strictly
increases; protected resources reject older tokens; a leader that cannot
prove its lease is still safely held stops acting by itself.

Every flag has an environment twin: --wait-timeout can also be set with
TENURE_WAIT_TIMEOUT. A flag on the command line wins.

The coordinator is one of:
  etcd        by default a "tenure server" on this machine (tenure's own
              embedded etcd member); your own cluster with --endpoints
  PostgreSQL  with --postgres DSN
  Kubernetes  Leases, with --kubeconfig FILE (or --namespace NS alone,
              inside a pod: its service account)

Exit codes:
  0    success
  1    a "no": lease check (not held), release (refused), verify and
       bench (a safety violation)
  2    bad flags or arguments, unknown command
  3    tenure run: not leader within --wait-timeout
  4    tenure status --exit-code: nobody leads
  5    tenure verify: could not run, or the run proved nothing
  ` + exitCodesTenure + `
  126  tenure run: the command could not be started
  127  tenure run: the command was not found
  N    tenure run: the command's own exit code (128+S when signal S ended it)`

// rootExample is the example section of the tenure command's help.
const rootExample = `  # one terminal: a single-member etcd, data in ./tenure-data
  tenure server

  # two more terminals: only one worker runs at a time
  tenure run --key jobs -- ./worker.sh

  tenure status --key jobs
  tenure watch --key jobs`

// preRun checks the flags of cmd, whichever subcommand it is, and sets
// those not given from their environment twins.
func (g *globalFlags) preRun(cmd *cobra.Command, _ []string) error {
	if err := checkFlagScope(cmd); err != nil {
		return err
	}
	if err := bindEnv(cmd, os.Getenv); err != nil {
		return err
	}
	if g.logFormat != "text" && g.logFormat != "json" {
		return usageError("%s %q: want text or json", flagRef(cmd, "log-format"), g.logFormat)
	}
	return nil
}

// addCommands adds tenure's subcommands to root, each with the global
// flags it uses and its exit codes.
func addCommands(root *cobra.Command, g *globalFlags) {
	root.AddCommand(exitCodes(uses(newServerCommand(g)), exitCodesServer))
	root.AddCommand(newRunCommand(g))
	root.AddCommand(exitCodes(newStatusCommand(g), exitCodesStatus))
	root.AddCommand(exitCodes(newWatchCommand(g), exitCodesPlain))
	root.AddCommand(newReleaseCommand(g))
	root.AddCommand(exitCodes(uses(newDemoCommand(g), "postgres", "dial-timeout"), exitCodesDemo))
	root.AddCommand(exitCodes(uses(newVerifyCommand(g), "endpoints", "postgres", "kubeconfig", "namespace", "dial-timeout"), exitCodesVerify))
	root.AddCommand(uses(newVerifyNodeCommand()))
	root.AddCommand(usesNoneDeep(newLeaseCommand()))
	root.AddCommand(exitCodes(newBenchCommand(g), exitCodesBench))
	root.AddCommand(newVersionCommand())
	root.AddCommand(usesNoneDeep(newCertsCommand()))
}

// noArgs rejects positional arguments as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError("%s takes no arguments, got %q (see '%s --help')", cmd.CommandPath(), args, cmd.CommandPath())
	}
	return nil
}

// bindEnv gives every flag of fs an environment twin: --wait-timeout reads
// TENURE_WAIT_TIMEOUT when the flag is not set on the command line.
func bindEnv(cmd *cobra.Command, getenv func(string) string) error {
	var errs []error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Changed || f.Name == "help" || !usesFlag(cmd, f.Name) {
			return
		}
		name := envName(f.Name)
		if isCommandVar(name) && insideCommand(getenv) {
			return // the parent tenure run's term, not a setting
		}
		if v := getenv(name); v != "" {
			if err := f.Value.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("invalid %s=%q (for --%s): %w", name, v, f.Name, err))
				return
			}
			f.Changed = true
			if f.Annotations == nil {
				f.Annotations = map[string][]string{}
			}
			f.Annotations[envAnnotation] = []string{name}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return &exitError{code: ExitUsage, err: err}
	}
	return nil
}

// envAnnotation marks a flag set from its environment twin.
const envAnnotation = "tenure-env"

// flagRef names flag name of cmd for an error message: "--key", or
// "TENURE_KEY (--key)" when the value came from the environment.
func flagRef(cmd *cobra.Command, name string) string { return flagSetRef(cmd.Flags(), name) }

// flagSetRef is flagRef for a flag set.
func flagSetRef(fs *pflag.FlagSet, name string) string {
	if f := fs.Lookup(name); f != nil {
		if env := f.Annotations[envAnnotation]; len(env) > 0 {
			return fmt.Sprintf("%s (--%s)", env[0], name)
		}
	}
	return "--" + name
}

// envName maps a flag name to its environment twin: wait-timeout →
// TENURE_WAIT_TIMEOUT.
func envName(flag string) string {
	b := []byte("TENURE_" + flag)
	for i, c := range b {
		switch {
		case c == '-':
			b[i] = '_'
		case 'a' <= c && c <= 'z':
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}
