package chaos

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

// History is everything a run recorded.
type History struct {
	Options   Options       `json:"-"`
	Origin    int64         `json:"origin"` // Mono at the start
	Finish    int64         `json:"finish"` // Mono at the end of the fault phase
	Events    []Event       `json:"events"`
	Decisions []Decision    `json:"decisions"`
	Reads     []Read        `json:"reads"`
	Faults    []FaultRecord `json:"faults"`
	// Kills maps a holder to when it was SIGKILLed (Mono).
	Kills map[string]int64 `json:"kills"`
	// Pauses are the SIGSTOP windows, per holder.
	Pauses map[string][][2]int64 `json:"pauses"`
	// NodeErrors are the tails of the standard error of nodes that exited
	// unexpectedly.
	NodeErrors []string `json:"node_errors,omitempty"`
}
