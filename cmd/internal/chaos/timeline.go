package chaos

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/tenure-dev/tenure/internal/history"
)

// Kinds of timeline points.
const (
	pointAccepted      = "accepted"       // a write the register accepted
	pointRejected      = "rejected"       // a write the register rejected
	pointUnknown       = "unknown"        // a write the register never decided, its writer got no answer
	pointRenewal       = "renewal"        // a renewal that extended the lease
	pointRenewalFailed = "renewal-failed" // a renewal that failed or found the grant lost
	pointDeadline      = "deadline"       // a term's last local deadline
)

// point is one event the HTML report draws on a node's lane.
type point struct {
	// At is when it happened (Mono).
	At     int64  `json:"at"`
	Node   int    `json:"node"`
	Holder string `json:"holder"`
	// Kind is one of the point constants.
	Kind  string `json:"kind"`
	Token uint64 `json:"token"`
	// Text says what happened, for a tooltip.
	Text string `json:"text"`
	// Late marks a late write across a pause.
	Late bool `json:"late,omitempty"`
}

// timeline returns the writes, renewals and local deadlines of h, in time
// order: each write where the register decided it (or, undecided, where it
// was sent), each renewal where its reply came, each term's last local
// deadline. The writes of late (value → accepted) are marked as late
// writes across a pause, and their text says what that means.
func timeline(h *History, late map[string]bool) []point {
	w := history.IndexWrites(h.Events)
	var out []point
	decided := map[string]bool{}
	for _, d := range h.Decisions {
		ws, ok := w.Starts[d.Value]
		if !ok {
			continue
		}
		decided[d.Value] = true
		p := point{At: d.At, Node: ws.Node, Holder: ws.Holder, Kind: pointAccepted, Token: d.Token}
		if !d.Accepted {
			p.Kind = pointRejected
		}
		p.Text = fmt.Sprintf("write %s token %d %s at %.3fs", d.Value, d.Token, p.Kind, h.Rel(d.At))
		if _, p.Late = late[d.Value]; p.Late {
			p.Text += fmt.Sprintf(": a late write across a pause, sent at %.3fs before %s was paused, landed after its lease; %s",
				h.Rel(ws.At), ws.Holder, lateVerdict(d.Accepted))
		}
		out = append(out, p)
	}
	for v, ws := range w.Starts {
		res, ok := w.Results[v]
		if decided[v] || (ok && res.Result != history.ResultUnknown) {
			continue
		}
		out = append(out, point{At: ws.At, Node: ws.Node, Holder: ws.Holder, Kind: pointUnknown, Token: ws.Token,
			Text: fmt.Sprintf("write %s token %d sent at %.3fs: outcome unknown", v, ws.Token, h.Rel(ws.At))})
	}
	for _, ev := range h.Events {
		if p, ok := leasePoint(h, ev); ok {
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out, func(a, b point) int { return cmp.Compare(a.At, b.At) })
	return out
}

// leasePoint returns the timeline point of a renewal or of a term's end
// (its last local deadline).
func leasePoint(h *History, ev history.Event) (point, bool) {
	p := point{At: ev.At, Node: ev.Node, Holder: ev.Holder, Token: ev.Token}
	switch {
	case ev.Kind == history.KindRenew && ev.OK:
		p.Kind = pointRenewal
		p.Text = fmt.Sprintf("%s renewed token %d at %.3fs (sent %.3fs)", ev.Holder, ev.Token, h.Rel(ev.At), h.Rel(ev.Sent))
	case ev.Kind == history.KindRenew:
		p.Kind = pointRenewalFailed
		how := "failed"
		if ev.Lost {
			how = "found the grant lost"
		}
		p.Text = fmt.Sprintf("%s renewal of token %d %s at %.3fs %s", ev.Holder, ev.Token, how, h.Rel(ev.At), ev.Err)
	case ev.Kind == history.KindEnd && ev.Deadline != 0:
		p.At, p.Kind = ev.Deadline, pointDeadline
		p.Text = fmt.Sprintf("%s token %d: local deadline %.3fs", ev.Holder, ev.Token, h.Rel(ev.Deadline))
	default:
		return point{}, false
	}
	return p, true
}

// lateVerdict says why fencing decided a late write across a pause as it
// did.
func lateVerdict(accepted bool) string {
	if accepted {
		return "fencing accepted it, since no newer token had written yet"
	}
	return "fencing rejected it, since a newer token had written"
}
