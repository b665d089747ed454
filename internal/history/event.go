package history

import "time"

// The kinds of node events a term's life is told in: the in-process
// simulations of package tenure and package partition record only these.
const (
	KindElected = "elected" // a term began (Token)
	KindEnd     = "end"     // a term's context was cancelled (Token, Deadline: the final local deadline)
)

// The other kinds of node events.
const (
	KindStart      = "start"       // the node process is up
	KindAcquire    = "acquire"     // an acquire call returned (Sent, At, OK, Token, TTL)
	KindRenew      = "renew"       // a renew call returned (Sent, At, OK, Lost, Token, TTL)
	KindRelease    = "release"     // a release call returned
	KindTransition = "transition"  // any other transition the elector reported (Result names it)
	KindWriteStart = "write-start" // a write is about to be sent (Token, Value, Deadline)
	KindWrite      = "write"       // a write finished (Sent, Token, Value, Result)

	// Partitioned runs (Options.Partitions > 0): the node is one member of
	// a partition group; its term, write and claim events name their
	// Partition.
	KindJoin        = "join"         // a join call returned (Sent, At, OK, Epoch, TTL)
	KindRenewMember = "renew-member" // a membership renewal returned (Sent, At, OK, Lost, Epoch, TTL)
	KindLeave       = "leave"        // a leave call returned (Epoch)
	KindClaim       = "claim"        // a partition was granted in a claim (Sent, At, Partition, Token, Epoch)

	KindClock = "clock" // the runner set the node's clock (Rate, Wall)
)

// Write results.
const (
	ResultAccepted = "accepted" // the register stored the value (200)
	ResultStale    = "stale"    // rejected as stale (409)
	ResultRejected = "rejected" // rejected otherwise (428, 400)
	ResultUnknown  = "unknown"  // no answer: the outcome is unknown
	ResultRefused  = "refused"  // never sent: the term had ended
)

// Event is one line of a node's history, as the node process writes it on
// its standard output. Times are readings of the run's clock in nanoseconds.
type Event struct {
	// Node is the index of the node slot (0…n−1); set by the runner.
	Node   int    `json:"node"`
	Holder string `json:"holder,omitempty"`
	Kind   string `json:"kind"`
	// At is when the event happened.
	At int64 `json:"at"`
	// Sent is when the request behind the event was sent.
	Sent     int64         `json:"sent,omitempty"`
	Token    uint64        `json:"token,omitempty"`
	TTL      time.Duration `json:"ttl,omitempty"`
	Deadline int64         `json:"deadline,omitempty"`
	OK       bool          `json:"ok,omitempty"`
	Lost     bool          `json:"lost,omitempty"`
	Value    string        `json:"value,omitempty"`
	Result   string        `json:"result,omitempty"`
	Err      string        `json:"err,omitempty"`
	// Partition names the partition of a partitioned run the event is
	// about; "" in a single-key run and for a member's own events.
	Partition string `json:"partition,omitempty"`
	// Epoch is the membership's epoch, for member and claim events.
	Epoch uint64 `json:"epoch,omitempty"`
	// Rate is the rate of the node's own clock against real time when the
	// lease of an acquire, renew, join or renew-member event was counted
	// (0 means 1: a true clock), and the rate a clock event set.
	Rate float64 `json:"rate,omitempty"`
	// Wall is how far a clock event put the node's wall clock from the
	// true time (negative: behind).
	Wall time.Duration `json:"wall,omitempty"`
}
