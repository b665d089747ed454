package fence

import (
	"errors"
	"fmt"

	"github.com/tenure-dev/tenure"
)

// Sentinel errors. Callers match them with errors.Is; ProblemFor maps them
// to HTTP answers.
var (
	// ErrMissingToken is wrapped by the error a fence returns for token 0 and
	// by TokenFromHeader when a request carries no Fencing-Token header.
	ErrMissingToken = errors.New("fence: missing fencing token")

	// ErrMalformedToken is wrapped by errors about a token that is not a
	// positive base-10 uint64, or a header that carries more than one.
	ErrMalformedToken = errors.New("fence: malformed fencing token")
)

// StaleError is the rejection of a fencing token lower than the highest the
// resource has accepted: the presenter is no longer the leader. It matches
// tenure.ErrStaleToken. Callers read Presented and Required with errors.As,
// as the etcd and postgres fences and the tenure command do.
type StaleError struct {
	// Presented is the token that was rejected.
	Presented uint64
	// Required is the lowest token the resource accepts: the highest it has
	// accepted so far.
	Required uint64
}

// Error describes the rejection.
func (e *StaleError) Error() string {
	return fmt.Sprintf("fence: stale fencing token %d: %d or newer required", e.Presented, e.Required)
}

// Is reports whether target is tenure.ErrStaleToken.
func (e *StaleError) Is(target error) bool { return target == tenure.ErrStaleToken }
