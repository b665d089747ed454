package cli

import (
	"context"
	"errors"
	"syscall"
)

// ExitLost (EX_TEMPFAIL) is tenure run's exit code with --exit-on-loss when
// leadership was lost: try again later.
const ExitLost = 75

// exitCodesTenure is the part of every command's "Exit codes:" help about
// tenure's own runtime failures.
const exitCodesTenure = `69   the coordinator could not be reached, or refused the connection or
       the credentials (EX_UNAVAILABLE: try again later)
  70   tenure itself failed (EX_SOFTWARE): see the message on stderr`

// unavailable marks err, from opening the coordinator, with
// ExitUnavailable, unless it carries an exit code already (a flag error).
func unavailable(err error) error {
	var ee *exitError
	if err == nil || errors.As(err, &ee) {
		return err
	}
	return &exitError{code: ExitUnavailable, err: err}
}

// runtimeCode is the exit code of a runtime error that carries none:
// ExitUnavailable when it says the coordinator did not answer in time or
// could not be reached, ExitSoftware otherwise.
func runtimeCode(err error) int {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, syscall.ECONNREFUSED) {
		return ExitUnavailable
	}
	return ExitSoftware
}
