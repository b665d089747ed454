package tenure

import (
	"errors"
	"fmt"

	"github.com/tenure-dev/tenure/internal/display"
)

// Sentinel errors. Callers match them with errors.Is; the typed errors below
// wrap or match them too.
var (
	// ErrInvalidConfig is wrapped by every error Config.Validate reports.
	ErrInvalidConfig = errors.New("tenure: invalid config")

	// ErrInvalidKey is wrapped by errors about a malformed key.
	ErrInvalidKey = errors.New("tenure: invalid key")

	// ErrInvalidHolder is wrapped by errors about a malformed holder identity.
	ErrInvalidHolder = errors.New("tenure: invalid holder")

	// ErrInvalidTTL is wrapped by errors about a TTL the coordinator cannot grant.
	ErrInvalidTTL = errors.New("tenure: invalid TTL")

	// ErrInvalidGrant is wrapped by errors about a grant that cannot have come
	// from a coordinator (empty key, zero token, …).
	ErrInvalidGrant = errors.New("tenure: invalid grant")

	// ErrHeld is matched by *HeldError: another holder has a live lease.
	ErrHeld = errors.New("tenure: key held by another holder")

	// ErrLost means a grant expired, was released or was superseded. A lost
	// grant is never revived: the holder must acquire again and gets a new
	// token.
	ErrLost = errors.New("tenure: grant lost")

	// ErrNotLeader is returned by Term.Check once the term has ended: its local
	// deadline passed, its grant was lost, or it was stepped down.
	ErrNotLeader = errors.New("tenure: not leader")

	// ErrStaleToken is what a fenced resource's rejection matches: a newer
	// token has been accepted, so the presenter is no longer the leader. User
	// code that returns an error matching it makes the Elector step down at
	// once ("fenced by resource").
	ErrStaleToken = errors.New("tenure: stale fencing token")

	// ErrClosed is returned by a Coordinator used after Close.
	ErrClosed = errors.New("tenure: coordinator closed")

	// ErrRefused is wrapped, together with the coordinator's own error, by
	// an error about a request the coordinator refused for good: a
	// permission the caller's role lacks, credentials it does not accept,
	// or a configuration it rejects. Waiting does not cure it, so
	// Elector.Run and a partition group's Run return it instead of
	// retrying. Timeouts, unavailable servers and conflicts never match
	// it. Each coordinator of this module marks its refusals so (see its
	// package documentation); errors.As still finds the coordinator's own
	// error beneath it.
	ErrRefused = errors.New("tenure: coordinator refused the request")
)

// HeldError reports that a key is held by another holder with a live lease.
// It matches ErrHeld. Callers read Holder and Token with errors.As, as the
// Elector does to log whom it follows.
type HeldError struct {
	// Key is the key asked for.
	Key string
	// Holder is who holds it now.
	Holder string
	// Token is the fencing token of the live grant.
	Token uint64
}

// Error names the key, the holder and its token.
func (e *HeldError) Error() string {
	return fmt.Sprintf("tenure: key %q held by %s (token %d)", e.Key, display.Holder(e.Holder), e.Token)
}

// Is reports whether target is ErrHeld.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// IsStale reports whether err says that a resource rejected a fencing token
// as stale (it matches ErrStaleToken).
func IsStale(err error) bool { return errors.Is(err, ErrStaleToken) }
