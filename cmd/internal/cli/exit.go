package cli

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/etcd"
	"github.com/tenure-dev/tenure/partition"
)

// tenure's own runtime failures, by cause, from sysexits.h (see
// docs/exit-codes.md): codes that commands rarely use for their own
// results.
const (
	// ExitLost (EX_TEMPFAIL) is tenure run's exit code with --exit-on-loss
	// when leadership was lost: try again later.
	ExitLost = 75
	// ExitNoPerm (EX_NOPERM) is tenure's exit code when the coordinator
	// refused the credentials or the permission (a wrong password, a
	// Kubernetes RBAC "forbidden"): retrying does not help.
	ExitNoPerm = 77
	// ExitConfig (EX_CONFIG) is tenure's exit code when a configuration
	// well-formed as flags does not fit what it meets: a connection
	// parameter PostgreSQL does not know, a partition count other than the
	// group's.
	ExitConfig = 78
)

// exitCodesTenure is the part of every command's "Exit codes:" help about
// tenure's own runtime failures.
const exitCodesTenure = `69   the coordinator could not be reached, or a port to listen on is in
       use (EX_UNAVAILABLE: try again later)
  70   tenure itself failed (EX_SOFTWARE): see the message on stderr
  77   the coordinator refused the credentials or the permission (EX_NOPERM)
  78   a configuration the coordinator refuses: an unknown connection
       parameter, a database that does not exist, TLS the server does not
       offer, a partition count other than the group's (EX_CONFIG)`

// unavailable marks err, from opening the coordinator, with its exit code
// (ExitUnavailable unless its cause says otherwise: see causeCode), unless
// it carries an exit code already (a flag error).
func unavailable(err error) error {
	var ee *exitError
	if err == nil || errors.As(err, &ee) {
		return err
	}
	code := causeCode(err)
	if code == 0 {
		code = ExitUnavailable
	}
	return &exitError{code: code, err: err}
}

// runtimeCode is the exit code of a runtime error that carries none: by
// its cause (causeCode); ExitUnavailable when it says the coordinator did
// not answer in time or could not be reached; ExitSoftware otherwise.
func runtimeCode(err error) int {
	if code := causeCode(err); code != 0 {
		return code
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, syscall.ECONNREFUSED) {
		return ExitUnavailable
	}
	return ExitSoftware
}

// causeCode is the exit code err's cause calls for, or 0 when it names
// none of these: ExitConfig for a configuration the coordinator refuses,
// ExitNoPerm for refused credentials or permission, ExitUnavailable for a
// port in use.
func causeCode(err error) int {
	switch {
	case misconfigured(err): // before refused: the coordinators mark both as refusals
		return ExitConfig
	case refused(err):
		return ExitNoPerm
	case errors.Is(err, syscall.EADDRINUSE):
		return ExitUnavailable
	}
	return 0
}

// refused reports whether err says the coordinator refused the
// credentials or the permission: a refusal the coordinator marks so
// (tenure.ErrRefused: a PostgreSQL privilege or login refused, etcd's
// "permission denied" or a password refused, a Kubernetes Forbidden or
// Unauthorized), Dial's etcd.ErrAuth, or a Kubernetes Unauthorized to
// the request for /version that tenure makes itself.
func refused(err error) bool {
	return errors.Is(err, tenure.ErrRefused) || errors.Is(err, etcd.ErrAuth) || apierrors.IsUnauthorized(err)
}

// misconfigured reports whether err says the coordinator refuses the
// configuration: PostgreSQL does not know a connection parameter
// (SQLSTATE 42704, "unrecognized configuration parameter", as for
// sslmod=disable) or refuses its value (22023), the database named does
// not exist (3D000), the server does not offer the TLS sslmode requires,
// or the group runs with another partition count.
func misconfigured(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "42704" || pgErr.Code == "22023" || pgErr.Code == "3D000") {
		return true
	}
	if errors.Is(err, errServerNoTLS) {
		return true
	}
	var ce *partition.CountError
	return errors.As(err, &ce)
}

// interrupted is the cause of the context of NotifyContext when a signal
// ended it.
type interrupted struct{ sig syscall.Signal }

func (e interrupted) Error() string { return e.sig.String() }

// Is makes an interruption a context cancellation, as signal.NotifyContext's.
func (e interrupted) Is(target error) bool { return target == context.Canceled }

// NotifyContext is the context of tenure's Main: cancelled at the first
// SIGINT or SIGTERM, with a cause that tells Main which (see signalCode).
// stop releases it.
func NotifyContext(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case s := <-ch:
			cancel(interrupted{s.(syscall.Signal)})
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		cancel(nil)
		signal.Stop(ch)
		<-done
	}
}

// signalCode is 128+N when a signal N ended ctx (see NotifyContext), 0
// otherwise: the exit code of a command that failed because it was
// interrupted.
func signalCode(ctx context.Context) int {
	var in interrupted
	if ctx != nil && errors.As(context.Cause(ctx), &in) {
		return exitSignalBase + int(in.sig)
	}
	return 0
}
