package history

import "fmt"

// MaxDetails bounds the events listed per checker.
const MaxDetails = 20

// Check is one checker's verdict.
type Check struct {
	Name string `json:"name"`
	// Safety checkers must report 0; others are informational.
	Safety bool `json:"safety"`
	Count  int  `json:"count"`
	// Details lists the offending events (at most 20).
	Details []string `json:"details,omitempty"`
	// Marks place the offending events on the timeline (at most
	// MaxMarks): those with a time and a node.
	Marks []Mark `json:"marks,omitempty"`
	Note  string `json:"note,omitempty"`
}

// Add counts one violation and keeps its detail (at most MaxDetails).
func (c *Check) Add(format string, args ...any) {
	c.Count++
	if len(c.Details) < MaxDetails {
		c.Details = append(c.Details, fmt.Sprintf(format, args...))
	}
}

// Span is one term as its node lived it: [Start, End] on the run's clock,
// End being the earlier of the term's end and its local deadline.
type Span struct {
	Node   int    `json:"node"`
	Holder string `json:"holder"`
	Token  uint64 `json:"token"`
	Start  int64  `json:"start"`
	End    int64  `json:"end"`
	// How says how the term ended: expired, lost, fenced, resigned, killed, …
	How string `json:"how"`
	// Partition names the term's partition in a partitioned run.
	Partition string `json:"partition,omitempty"`
}

// MaxMarks bounds the violations placed on the timeline per checker.
const MaxMarks = 200

// Mark places one violation on the timeline: when, on which node, and
// what happened.
type Mark struct {
	// At is when it happened (the run's clock).
	At int64 `json:"at"`
	// Node is the node slot whose lane it belongs on.
	Node int    `json:"node"`
	Text string `json:"text"`
}

// AddAt counts one violation that happened at at on node slot node: its
// detail, and its mark on the timeline.
func (c *Check) AddAt(at int64, node int, format string, args ...any) {
	c.Add(format, args...)
	if len(c.Marks) < MaxMarks {
		c.Marks = append(c.Marks, Mark{At: at, Node: node, Text: fmt.Sprintf(format, args...)})
	}
}

// WriterNode returns the node slot that sent the write of value, or -1 when
// no write of it started.
func WriterNode(starts map[string]Event, value string) int {
	if ws, ok := starts[value]; ok {
		return ws.Node
	}
	return -1
}
