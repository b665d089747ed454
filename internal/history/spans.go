package history

// Spans rebuilds every term from the node events: from its elected event
// to the earlier of its end event and the local deadline that event carries;
// a term with no end ends when its process was killed, or at the end of
// the run.
func Spans(h *History) []Span {
	type k struct {
		holder string
		token  uint64
	}
	idx := map[k]int{}
	var out []Span
	last := map[string]int64{} // holder → its last event
	for _, ev := range h.Events {
		last[ev.Holder] = max(last[ev.Holder], ev.At)
		switch ev.Kind {
		case KindElected:
			idx[k{ev.Holder, ev.Token}] = len(out)
			out = append(out, Span{Node: ev.Node, Holder: ev.Holder, Token: ev.Token, Start: ev.At})
		case KindTransition:
			if i, ok := idx[k{ev.Holder, ev.Token}]; ok && out[i].How == "" {
				out[i].How = ev.Result
			}
		case KindEnd:
			if i, ok := idx[k{ev.Holder, ev.Token}]; ok {
				end := ev.At
				if ev.Deadline != 0 && ev.Deadline < end {
					end = ev.Deadline
				}
				out[i].End = end
			}
		}
	}
	for i := range out {
		s := &out[i]
		if s.End != 0 {
			continue
		}
		if at, ok := h.Kills[s.Holder]; ok {
			s.End, s.How = at, "killed"
		} else {
			s.End = max(last[s.Holder], h.Finish)
			if s.How == "" {
				s.How = "running at the end"
			}
		}
	}
	return out
}
