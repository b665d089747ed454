// Package history is the format of a leader-election run's history and the
// checkers that judge it: every term as its node lived it (Spans), no two
// terms of different tokens overlapping (CheckOverlap), a term that began
// after another ended having a greater token (CheckTokenOrder), and no
// write accepted with a token lower than one accepted before
// (CheckStaleWrites). tenure verify records its runs in this format and
// adds the checkers that need its own faults and models; the in-process
// simulations of packages tenure and partition record theirs in it too, so
// that one set of checkers judges both.
//
// Times are readings of one monotonic clock in nanoseconds.
package history

// History is what a run recorded: the node events and the register's
// decisions and reads.
type History struct {
	Origin    int64      `json:"origin"` // the clock at the start
	Finish    int64      `json:"finish"` // the clock at the end of the fault phase
	Events    []Event    `json:"events"`
	Decisions []Decision `json:"decisions"`
	Reads     []Read     `json:"reads"`
	// Kills maps a holder to when it was SIGKILLed.
	Kills map[string]int64 `json:"kills"`
	// Pauses are the SIGSTOP windows, per holder.
	Pauses map[string][][2]int64 `json:"pauses"`
	// NodeErrors are the tails of the standard error of nodes that exited
	// unexpectedly.
	NodeErrors []string `json:"node_errors,omitempty"`
}

// Rel returns t as seconds since the start of h.
func (h *History) Rel(t int64) float64 { return float64(t-h.Origin) / 1e9 }

// Decision is one write the register service decided on.
type Decision struct {
	// Seq numbers decisions 1, 2, 3, … in the order they were made.
	Seq uint64 `json:"seq"`
	// At is when the decision was made (the run's clock).
	At    int64  `json:"at"`
	Token uint64 `json:"token"`
	Value string `json:"value"`
	// Path is "fenced" or "unfenced".
	Path string `json:"path"`
	// Partition names the register's per-partition resource written; ""
	// for the single register of a single-key run.
	Partition string `json:"partition,omitempty"`
	Accepted  bool   `json:"accepted"`
	Status    int    `json:"status"`
}

// Read is one read of the register by the runner.
type Read struct {
	Call   int64  `json:"call"`
	Return int64  `json:"return"`
	OK     bool   `json:"ok"`
	Value  string `json:"value"`
	Token  uint64 `json:"token"`
	// Partition names the resource read; "" for the single register.
	Partition string `json:"partition,omitempty"`
}
