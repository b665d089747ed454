package chaos

import "github.com/tenure-dev/tenure/internal/history"

// FaultRecord is a fault as it was applied.
type FaultRecord struct {
	Fault
	// Target is the node struck (resolved from leaderNode), -1 for a member.
	Target int    `json:"target"`
	Holder string `json:"holder,omitempty"`
	// Start and End are when the fault began and healed (Mono).
	Start int64 `json:"start"`
	End   int64 `json:"end"`
	// Note says what was done.
	Note string `json:"note,omitempty"`
}

// History is everything a run recorded: the node events, the register's
// decisions and reads (package history), and the faults applied.
type History struct {
	Options Options `json:"-"`
	history.History
	Faults []FaultRecord `json:"faults"`
}
