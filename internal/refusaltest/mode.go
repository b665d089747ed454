package refusaltest

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/tenure-dev/tenure"
)

// Failure modes of a Mode.
const (
	Answers   = iota // calls go through
	Transient        // calls fail as a timeout does: retried
	Refuses          // calls are refused for good: wrap tenure.ErrRefused
)

// RoleError stands for a backend's own error about a missing permission
// (a *pgconn.PgError, an rpctypes error, an apierrors StatusError).
type RoleError struct{ Role string }

func (e *RoleError) Error() string { return fmt.Sprintf("role %q may not write", e.Role) }

// Mode is how a test's coordinator wrapper fails its calls before they
// reach the coordinator: as a backend's do for a role that may not write
// (Refuses) or for a server that does not answer (Transient).
type Mode struct{ mode atomic.Int32 }

// Set sets the failure mode.
func (m *Mode) Set(mode int) { m.mode.Store(int32(mode)) }

// Fail returns the error of call op in the current mode, nil for Answers.
func (m *Mode) Fail(op string) error {
	switch m.mode.Load() {
	case Transient:
		return fmt.Errorf("%s: %w", op, context.DeadlineExceeded)
	case Refuses:
		return fmt.Errorf("%s: %w: %w", op, tenure.ErrRefused, &RoleError{"reader"})
	}
	return nil
}
