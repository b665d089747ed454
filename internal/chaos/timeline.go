package chaos

import (
	"fmt"
	"slices"
)

// Kinds of timeline points.
const (
	PointAccepted      = "accepted"       // a write the register accepted
	PointRejected      = "rejected"       // a write the register rejected
	PointUnknown       = "unknown"        // a write the register never decided, its writer got no answer
	PointRenewal       = "renewal"        // a renewal that extended the lease
	PointRenewalFailed = "renewal-failed" // a renewal that failed or found the grant lost
	PointDeadline      = "deadline"       // a term's last local deadline
)

// Point is one event the HTML report draws on a node's lane.
type Point struct {
	// At is when it happened (Mono).
	At     int64  `json:"at"`
	Node   int    `json:"node"`
	Holder string `json:"holder"`
	// Kind is one of the Point constants.
	Kind  string `json:"kind"`
	Token uint64 `json:"token"`
	// Text says what happened, for a tooltip.
	Text string `json:"text"`
}

// Timeline returns the writes, renewals and local deadlines of h, in time
// order: each write where the register decided it (or, undecided, where it
// was sent), each renewal where its reply came, each term's last local
// deadline.
func Timeline(h *History) []Point {
	w := indexWrites(h.Events)
	var out []Point
	decided := map[string]bool{}
	for _, d := range h.Decisions {
		ws, ok := w.starts[d.Value]
		if !ok {
			continue
		}
		decided[d.Value] = true
		p := Point{At: d.At, Node: ws.Node, Holder: ws.Holder, Kind: PointAccepted, Token: d.Token}
		if !d.Accepted {
			p.Kind = PointRejected
		}
		p.Text = fmt.Sprintf("write %s token %d %s at %.3fs", d.Value, d.Token, p.Kind, h.rel(d.At))
		out = append(out, p)
	}
	for v, ws := range w.starts {
		res, ok := w.results[v]
		if decided[v] || (ok && res.Result != ResultUnknown) {
			continue
		}
		out = append(out, Point{At: ws.At, Node: ws.Node, Holder: ws.Holder, Kind: PointUnknown, Token: ws.Token,
			Text: fmt.Sprintf("write %s token %d sent at %.3fs: outcome unknown", v, ws.Token, h.rel(ws.At))})
	}
	for _, ev := range h.Events {
		if p, ok := leasePoint(h, ev); ok {
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out, func(a, b Point) int { return cmpInt(a.At, b.At) })
	return out
}

// leasePoint returns the timeline point of a renewal or of a term's end
// (its last local deadline).
func leasePoint(h *History, ev Event) (Point, bool) {
	p := Point{At: ev.At, Node: ev.Node, Holder: ev.Holder, Token: ev.Token}
	switch {
	case ev.Kind == KindRenew && ev.OK:
		p.Kind = PointRenewal
		p.Text = fmt.Sprintf("%s renewed token %d at %.3fs (sent %.3fs)", ev.Holder, ev.Token, h.rel(ev.At), h.rel(ev.Sent))
	case ev.Kind == KindRenew:
		p.Kind = PointRenewalFailed
		how := "failed"
		if ev.Lost {
			how = "found the grant lost"
		}
		p.Text = fmt.Sprintf("%s renewal of token %d %s at %.3fs %s", ev.Holder, ev.Token, how, h.rel(ev.At), ev.Err)
	case ev.Kind == KindEnd && ev.Deadline != 0:
		p.At, p.Kind = ev.Deadline, PointDeadline
		p.Text = fmt.Sprintf("%s token %d: local deadline %.3fs", ev.Holder, ev.Token, h.rel(ev.Deadline))
	default:
		return Point{}, false
	}
	return p, true
}
