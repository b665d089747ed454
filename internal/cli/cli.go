// Package cli implements tenure's command line. It is the only package that
// knows every backend.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Exit codes of the tenure command.
const (
	ExitOK       = 0 // success
	ExitError    = 1 // a runtime error: coordinator unreachable, verification failed, …
	ExitUsage    = 2 // bad flags or arguments
	ExitNotReady = 3 // tenure run: --wait-timeout passed without leading
)

// ExitError carries an exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageError marks an error in flags or arguments (exit code 2).
func usageError(format string, args ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, args...)}
}

// Main runs the tenure command line with args and returns the exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCommand()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil && ee.code != ExitOK {
			if msg := ee.err.Error(); msg != "" {
				fmt.Fprintln(stderr, "tenure:", msg)
			}
		}
		return ee.code
	}
	fmt.Fprintln(stderr, "tenure:", err)
	return ExitError
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "tenure",
		Short: "Leader election that stays safe when a leader goes stale",
		Long: `tenure elects one leader per key through a consensus-backed coordinator
(etcd, or PostgreSQL). Every grant carries a fencing token that strictly
increases; protected resources reject older tokens; a leader that cannot
prove its lease is still safely held stops acting by itself.

Every flag has an environment twin: --wait-timeout can also be set with
TENURE_WAIT_TIMEOUT. A flag on the command line wins.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return bindEnv(cmd, os.Getenv)
		},
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &exitError{code: ExitUsage, err: fmt.Errorf("%w (see '%s --help')", err, cmd.CommandPath())}
	})
	root.AddCommand(newDemoCommand())
	return root
}

// bindEnv gives every flag of fs an environment twin: --wait-timeout reads
// TENURE_WAIT_TIMEOUT when the flag is not set on the command line.
func bindEnv(cmd *cobra.Command, getenv func(string) string) error {
	var errs []error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Changed || f.Name == "help" {
			return
		}
		name := envName(f.Name)
		if v := getenv(name); v != "" {
			if err := f.Value.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("invalid %s=%q (for --%s): %w", name, v, f.Name, err))
				return
			}
			f.Changed = true
		}
	})
	if err := errors.Join(errs...); err != nil {
		return &exitError{code: ExitUsage, err: err}
	}
	return nil
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
