package chaos

import (
	"encoding/json"
	"io"
	"sync"
	"time"
)

// Kinds of node events.
const (
	KindStart      = "start"       // the node process is up
	KindAcquire    = "acquire"     // an acquire call returned (Sent, At, OK, Token, TTL)
	KindRenew      = "renew"       // a renew call returned (Sent, At, OK, Lost, Token, TTL)
	KindRelease    = "release"     // a release call returned
	KindElected    = "elected"     // a term began (Token)
	KindTransition = "transition"  // any other transition the elector reported (Result names it)
	KindEnd        = "end"         // a term's context was cancelled (Token, Deadline: the final local deadline)
	KindWriteStart = "write-start" // a write is about to be sent (Token, Value, Deadline)
	KindWrite      = "write"       // a write finished (Sent, Token, Value, Result)

	// Partitioned runs (Options.Partitions > 0): the node is one member of
	// a partition group; its term, write and claim events name their
	// Partition.
	KindJoin        = "join"         // a join call returned (Sent, At, OK, Epoch, TTL)
	KindRenewMember = "renew-member" // a membership renewal returned (Sent, At, OK, Lost, Epoch, TTL)
	KindLeave       = "leave"        // a leave call returned (Epoch)
	KindClaim       = "claim"        // a partition was granted in a claim (Sent, At, Partition, Token, Epoch)
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
// its standard output. Times are Mono readings in nanoseconds.
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
}

// eventWriter writes events as JSON lines, one at a time.
type eventWriter struct {
	mu     sync.Mutex
	enc    *json.Encoder
	holder string
}

func newEventWriter(w io.Writer, holder string) *eventWriter {
	return &eventWriter{enc: json.NewEncoder(w), holder: holder}
}

func (w *eventWriter) emit(ev Event) {
	ev.Holder = w.holder
	if ev.At == 0 {
		ev.At = Mono()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	_ = w.enc.Encode(ev)
}
