package chaos

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/tenure-dev/tenure/internal/history"
)

// liveness measures recovery after each fault and the time without a
// leader.
func liveness(h *History, sp []history.Span) Liveness {
	l := recoveries(h, func(from int64) int64 { return firstAccepted(h.Decisions, from) })
	if total := h.Finish - h.Origin; total > 0 {
		l.NoLeaderShare = 1 - float64(covered(sp, h.Origin, h.Finish))/float64(total)
	}
	return l
}

// recoveries returns the liveness figures of h but NoLeaderShare: the time
// from each fault's heal to writtenAt(heal), when a write is accepted again
// (math.MaxInt64: never), for faults followed by that write before the
// next fault.
func recoveries(h *History, writtenAt func(from int64) int64) Liveness {
	o := h.Options
	l := Liveness{Bound: o.TTL + o.TTL/3 + o.TTL/10}
	for i, f := range h.Faults {
		next := int64(math.MaxInt64)
		if i+1 < len(h.Faults) {
			next = h.Faults[i+1].Start
		}
		if at := writtenAt(f.End); at != math.MaxInt64 && at <= next {
			l.Recoveries = append(l.Recoveries, time.Duration(at-f.End))
		}
	}
	l.summarize()
	return l
}

// covered returns how much of [from, to] lies within some span.
func covered(sp []history.Span, from, to int64) int64 {
	iv := make([][2]int64, 0, len(sp))
	for _, s := range sp {
		a, b := max(s.Start, from), min(s.End, to)
		if b > a {
			iv = append(iv, [2]int64{a, b})
		}
	}
	slices.SortFunc(iv, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	var sum, curA, curB int64
	curA, curB = -1, -1
	for _, x := range iv {
		if curB < 0 || x[0] > curB {
			if curB >= 0 {
				sum += curB - curA
			}
			curA, curB = x[0], x[1]
		} else {
			curB = max(curB, x[1])
		}
	}
	if curB >= 0 {
		sum += curB - curA
	}
	return sum
}
