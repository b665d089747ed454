package tenure

import (
	"fmt"
	"time"
)

// TransitionKind says what happened to a node's leadership.
type TransitionKind int

// The transitions an Elector reports.
const (
	// Elected: the node acquired the key and a term began.
	Elected TransitionKind = iota + 1
	// Resigned: the node released the key on purpose (the user function
	// returned, or Run's context ended).
	Resigned
	// Lost: the coordinator reported the grant expired or superseded, or
	// refused for good to renew it (Transition.Err matches ErrRefused).
	Lost
	// Expired: the local deadline passed before a renewal succeeded.
	Expired
	// Fenced: a resource rejected the term's token as stale.
	Fenced
	// SteppedDown: user code ended the term with Term.StepDown for another
	// reason.
	SteppedDown
)

var transitionNames = [...]string{
	Elected:     "acquired",
	Resigned:    "released",
	Lost:        "lost",
	Expired:     "deadline",
	Fenced:      "fenced",
	SteppedDown: "stepped-down",
}

// String returns the kind's name in the words logs, metrics and status
// pages use: "acquired" (Elected), "released" (Resigned), "lost",
// "deadline" (Expired: the local deadline passed), "fenced" and
// "stepped-down".
func (k TransitionKind) String() string {
	if k > 0 && int(k) < len(transitionNames) {
		return transitionNames[k]
	}
	return fmt.Sprintf("TransitionKind(%d)", int(k))
}

// Transition is one change of a node's leadership of a key.
type Transition struct {
	// Kind says what happened.
	Kind TransitionKind
	// Key is the key led.
	Key string
	// Holder is this node's identity.
	Holder string
	// Token is the fencing token of the term that began or ended.
	Token uint64
	// At is when the transition happened, on this process's clock.
	At time.Time
	// Err says why a term ended; nil for Elected and Resigned.
	Err error
}
