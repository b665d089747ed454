package etcd

import (
	"errors"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/errs"
)

// Sentinel errors. Callers match them with errors.Is (the tenure command
// picks its exit code and advice by them).
var (
	// ErrUnreachable is wrapped by Dial's error when no endpoint answered
	// within the dial timeout.
	ErrUnreachable = errors.New("etcd: unreachable")

	// ErrAuth is wrapped by Dial's error when etcd refused the credentials,
	// or requires credentials that were not given.
	ErrAuth = errors.New("etcd: authentication failed")

	// ErrInvalidConfig is wrapped by errors about a Config that cannot be
	// dialled.
	// It also matches tenure.ErrInvalidConfig.
	ErrInvalidConfig = errs.Kind("etcd: invalid config", tenure.ErrInvalidConfig)
)

func isLeaseNotFound(err error) bool {
	return errors.Is(err, rpctypes.ErrLeaseNotFound) || errors.Is(err, rpctypes.ErrGRPCLeaseNotFound)
}

func isAuthError(err error) bool {
	for _, e := range []error{
		rpctypes.ErrAuthFailed, rpctypes.ErrUserEmpty, rpctypes.ErrInvalidAuthToken,
		rpctypes.ErrGRPCAuthFailed, rpctypes.ErrGRPCUserEmpty, rpctypes.ErrGRPCInvalidAuthToken,
	} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
