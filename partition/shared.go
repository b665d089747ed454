package partition

import (
	"github.com/tenure-dev/tenure"
	"github.com/tenure-dev/tenure/internal/termhook"
)

// sharedDeadline is the one local deadline of a membership's partitions,
// which one renewal extends for all of them (tenure's terms that share a
// deadline, handed over by internal/termhook).
type sharedDeadline = termhook.Shared[tenure.Grant, *tenure.Term, tenure.Instant]

// termControl is the owner's side of one partition's term.
type termControl = termhook.Control[tenure.Grant, tenure.Instant]

// newSharedDeadline returns a shared deadline at dl, watched by one timer
// until Stop.
func newSharedDeadline(dl tenure.Instant) sharedDeadline {
	return termhook.NewShared.(func(tenure.Instant) sharedDeadline)(dl)
}
