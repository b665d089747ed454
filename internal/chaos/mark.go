package chaos

import "fmt"

// maxMarks bounds the violations placed on the timeline per checker.
const maxMarks = 200

// Mark places one violation on the timeline: when, on which node, and
// what happened.
type Mark struct {
	// At is when it happened (Mono).
	At int64 `json:"at"`
	// Node is the node slot whose lane it belongs on.
	Node int    `json:"node"`
	Text string `json:"text"`
}

// addAt counts one violation that happened at at on node slot node: its
// detail, and its mark on the timeline.
func (c *Check) addAt(at int64, node int, format string, args ...any) {
	c.add(format, args...)
	if len(c.Marks) < maxMarks {
		c.Marks = append(c.Marks, Mark{At: at, Node: node, Text: fmt.Sprintf(format, args...)})
	}
}

// writerNode returns the node slot that sent the write of value, or -1 when
// no write of it started.
func writerNode(starts map[string]Event, value string) int {
	if ws, ok := starts[value]; ok {
		return ws.Node
	}
	return -1
}
