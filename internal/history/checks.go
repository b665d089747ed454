package history

import (
	"cmp"
	"slices"
	"time"
)

// CheckStaleWrites reports every write the register accepted with a token
// lower than one it had accepted before.
func CheckStaleWrites(h *History) Check {
	c := Check{Name: "stale writes accepted", Safety: true}
	starts := IndexWrites(h.Events).Starts
	var highest uint64
	for _, d := range h.Decisions {
		if !d.Accepted {
			continue
		}
		if d.Token < highest {
			c.AddAt(d.At, WriterNode(starts, d.Value), "%.3fs: write %s with token %d accepted (%s path) after token %d", h.Rel(d.At), d.Value, d.Token, d.Path, highest)
		}
		highest = max(highest, d.Token)
	}
	return c
}

// byStart returns spans sorted by start.
func byStart(spans []Span) []Span {
	s := slices.Clone(spans)
	slices.SortStableFunc(s, func(a, b Span) int { return cmp.Compare(a.Start, b.Start) })
	return s
}

// CheckTokenOrder reports every term that began after another had ended
// without a greater token.
func CheckTokenOrder(h *History, spans []Span) Check {
	c := Check{Name: "token order", Safety: true}
	s := byStart(spans)
	for i, b := range s {
		for _, a := range s[:i] {
			if a.End < b.Start && b.Token <= a.Token {
				c.AddAt(b.Start, b.Node, "%s began term %d at %.3fs after %s's term %d ended at %.3fs", b.Holder, b.Token, h.Rel(b.Start), a.Holder, a.Token, h.Rel(a.End))
			}
		}
	}
	return c
}

// CheckOverlap reports every two terms of different tokens whose spans
// overlap, and the overlapping time in all.
func CheckOverlap(h *History, spans []Span) (Check, time.Duration) {
	c := Check{Name: "safe-lease overlap", Safety: true}
	var total time.Duration
	s := byStart(spans)
	for i, a := range s {
		for _, b := range s[i+1:] {
			if b.Start >= a.End {
				break
			}
			if a.Token == b.Token {
				continue
			}
			d := time.Duration(min(a.End, b.End) - b.Start)
			total += d
			c.AddAt(b.Start, b.Node, "%s (token %d) led %.3fs–%.3fs and %s (token %d) led %.3fs–%.3fs: %s overlap",
				a.Holder, a.Token, h.Rel(a.Start), h.Rel(a.End), b.Holder, b.Token, h.Rel(b.Start), h.Rel(b.End), d.Round(time.Millisecond))
		}
	}
	return c, total
}

// WriteOps pairs every write's start event with its result event, by value.
type WriteOps struct {
	Starts, Results map[string]Event
}

// IndexWrites indexes the write events of evs by value.
func IndexWrites(evs []Event) WriteOps {
	w := WriteOps{Starts: map[string]Event{}, Results: map[string]Event{}}
	for _, ev := range evs {
		switch ev.Kind {
		case KindWriteStart:
			w.Starts[ev.Value] = ev
		case KindWrite:
			w.Results[ev.Value] = ev
		}
	}
	return w
}
