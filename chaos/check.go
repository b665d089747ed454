package chaos

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
)

// maxDetails bounds the events listed per checker.
const maxDetails = 20

// Check is one checker's verdict.
type Check struct {
	Name string `json:"name"`
	// Safety checkers must report 0; others are informational.
	Safety bool `json:"safety"`
	Count  int  `json:"count"`
	// Details lists the offending events (at most 20).
	Details []string `json:"details,omitempty"`
	Note    string   `json:"note,omitempty"`
}

func (c *Check) add(format string, args ...any) {
	c.Count++
	if len(c.Details) < maxDetails {
		c.Details = append(c.Details, fmt.Sprintf(format, args...))
	}
}

// Span is one term as its node lived it: [Start, End] on the Mono clock,
// End being the earlier of the term's end and its local deadline.
type Span struct {
	Node   int    `json:"node"`
	Holder string `json:"holder"`
	Token  uint64 `json:"token"`
	Start  int64  `json:"start"`
	End    int64  `json:"end"`
	// How says how the term ended: expired, lost, fenced, resigned, killed, …
	How string `json:"how"`
}

// Liveness summarises recovery after faults.
type Liveness struct {
	// Recoveries are the times from each fault's heal to the next accepted
	// write, for faults followed by a write before the next fault.
	Recoveries []time.Duration `json:"recoveries"`
	P50        time.Duration   `json:"p50"`
	P99        time.Duration   `json:"p99"`
	Max        time.Duration   `json:"max"`
	// Bound is TTL + renew interval + retry period.
	Bound     time.Duration `json:"bound"`
	OverBound int           `json:"over_bound"`
	// NoLeaderShare is the share of the run with no term live.
	NoLeaderShare float64 `json:"no_leader_share"`
}

// Report is the verdict on one run.
type Report struct {
	Seed        uint64        `json:"seed"`
	Duration    time.Duration `json:"duration"`
	Nodes       int           `json:"nodes"`
	Coordinator string        `json:"coordinator"`
	TTL         time.Duration `json:"ttl"`
	Margin      time.Duration `json:"margin"`
	Plant       string        `json:"plant,omitempty"`
	Families    []string      `json:"families"`

	Origin int64 `json:"origin"`
	Finish int64 `json:"finish"`

	WritesAttempted int `json:"writes_attempted"`
	WritesAccepted  int `json:"writes_accepted"`
	WritesRejected  int `json:"writes_rejected"`
	WritesUnknown   int `json:"writes_unknown"`
	Reads           int `json:"reads"`
	// LateFenced counts writes that were in flight across a pause of their
	// process and landed after their lease: the register's fencing decided
	// them (accepted only when no newer token had written yet).
	LateWritesAcrossPause int `json:"late_writes_across_pause"`

	Faults []FaultRecord `json:"faults"`
	Spans  []Span        `json:"spans"`
	// RenewRoundTrips are the round trips of successful renewals.
	RenewRoundTrips struct {
		P50 time.Duration `json:"p50"`
		Max time.Duration `json:"max"`
	} `json:"renew_round_trips"`
	// Rejections are the register's rejected writes.
	Rejections []Decision `json:"rejections"`

	StaleWrites  Check         `json:"stale_writes"`
	TokenOrder   Check         `json:"token_order"`
	Overlap      Check         `json:"overlap"`
	OverlapTotal time.Duration `json:"overlap_total"`
	LeaseOverrun Check         `json:"lease_overrun"`
	Linearizable Check         `json:"linearizability"`
	// LinearizabilityResult is porcupine's answer: Ok, Illegal or Unknown
	// (timed out).
	LinearizabilityResult string   `json:"linearizability_result"`
	Liveness              Liveness `json:"liveness"`
	NodeErrors            []string `json:"node_errors,omitempty"`

	// Violations is the sum of the safety checkers' counts.
	Violations int `json:"violations"`
}

// OK reports whether every safety checker found nothing.
func (r *Report) OK() bool { return r.Violations == 0 }

// Checks returns the checkers in report order.
func (r *Report) Checks() []*Check {
	return []*Check{&r.StaleWrites, &r.TokenOrder, &r.Overlap, &r.LeaseOverrun, &r.Linearizable}
}

// Analyze runs every checker over h.
func Analyze(h *History) *Report {
	o := h.Options
	rep := &Report{
		Seed: o.Seed, Duration: o.Duration, Nodes: o.Nodes, TTL: o.TTL, Margin: o.Margin,
		Plant: o.Plant, Families: o.Families, Origin: h.Origin, Finish: h.Finish, Faults: h.Faults,
		NodeErrors: h.NodeErrors, Reads: len(h.Reads),
	}
	switch {
	case o.Postgres != "":
		rep.Coordinator = "postgres"
	case len(o.Endpoints) > 0:
		rep.Coordinator = "external etcd"
	default:
		rep.Coordinator = fmt.Sprintf("embedded etcd, %d member(s)", o.Members)
	}
	rep.StaleWrites = Check{Name: "stale writes accepted", Safety: true}
	rep.TokenOrder = Check{Name: "token order", Safety: true}
	rep.Overlap = Check{Name: "safe-lease overlap", Safety: true}
	rep.LeaseOverrun = Check{Name: "lease overrun", Safety: true}
	rep.Linearizable = Check{Name: "linearizability", Safety: true}

	rep.Spans = spans(h)
	rel := func(t int64) float64 { return float64(t-h.Origin) / 1e9 }

	// Writes.
	starts := map[string]Event{}
	results := map[string]Event{}
	for _, ev := range h.Events {
		switch ev.Kind {
		case KindWriteStart:
			starts[ev.Value] = ev
		case KindWrite:
			results[ev.Value] = ev
		}
	}
	for v := range starts {
		res, ok := results[v]
		switch {
		case ok && res.Result == ResultRefused:
			continue
		case !ok || res.Result == ResultUnknown:
			rep.WritesUnknown++
		}
		rep.WritesAttempted++
	}
	var highest uint64
	for _, d := range h.Decisions {
		if !d.Accepted {
			rep.WritesRejected++
			rep.Rejections = append(rep.Rejections, d)
			continue
		}
		rep.WritesAccepted++
		if d.Token < highest {
			rep.StaleWrites.add("%.3fs: write %s with token %d accepted (%s path) after token %d", rel(d.At), d.Value, d.Token, d.Path, highest)
		}
		highest = max(highest, d.Token)
	}

	// Token order: a term that began after another ended has a greater
	// token.
	byStart := slices.Clone(rep.Spans)
	slices.SortFunc(byStart, func(a, b Span) int { return cmpInt(a.Start, b.Start) })
	for i, s := range byStart {
		for _, a := range byStart[:i] {
			if a.End < s.Start && s.Token <= a.Token {
				rep.TokenOrder.add("%s began term %d at %.3fs after %s's term %d ended at %.3fs", s.Holder, s.Token, rel(s.Start), a.Holder, a.Token, rel(a.End))
			}
		}
	}

	// Overlap.
	for i, a := range byStart {
		for _, b := range byStart[i+1:] {
			if b.Start >= a.End {
				break
			}
			if a.Token == b.Token {
				continue
			}
			d := min(a.End, b.End) - b.Start
			rep.OverlapTotal += time.Duration(d)
			rep.Overlap.add("%s (token %d) led %.3fs–%.3fs and %s (token %d) led %.3fs–%.3fs: %s overlap",
				a.Holder, a.Token, rel(a.Start), rel(a.End), b.Holder, b.Token, rel(b.Start), rel(b.End), time.Duration(d).Round(time.Millisecond))
		}
	}

	// Lease overrun.
	type op struct {
		sent, reply int64
		ttl         time.Duration
	}
	leases := map[string][]op{} // holder/token → successful acquires and renewals
	key := func(holder string, token uint64) string { return fmt.Sprintf("%s/%d", holder, token) }
	var rtts []time.Duration
	for _, ev := range h.Events {
		if ev.Kind == KindRenew && ev.OK {
			rtts = append(rtts, time.Duration(ev.At-ev.Sent))
		}
		if (ev.Kind == KindAcquire || ev.Kind == KindRenew) && ev.OK {
			k := key(ev.Holder, ev.Token)
			leases[k] = append(leases[k], op{ev.Sent, ev.At, ev.TTL})
		}
	}
	if len(rtts) > 0 {
		slices.Sort(rtts)
		rep.RenewRoundTrips.P50, rep.RenewRoundTrips.Max = rtts[(len(rtts)-1)/2], rtts[len(rtts)-1]
	}
	for _, d := range h.Decisions {
		if !d.Accepted {
			continue
		}
		ws, ok := starts[d.Value]
		if !ok {
			continue
		}
		// The coordinator may expire a lease as early as TTL·(1−MaxDrift)
		// after the request was sent, on the node's clock, while clock rates
		// stay within the assumed drift: a write landing later is outside
		// what the lease guarantees, even when this machine's clocks agree.
		var end int64 = math.MinInt64
		for _, l := range leases[key(ws.Holder, ws.Token)] {
			if l.reply <= d.At {
				end = max(end, l.sent+int64(float64(l.ttl)*(1-o.MaxDrift)))
			}
		}
		if d.At <= end {
			continue
		}
		if pausedDuring(h.Pauses[ws.Holder], ws.At, d.At) {
			rep.LateWritesAcrossPause++
			continue
		}
		if end == math.MinInt64 {
			rep.LeaseOverrun.add("%.3fs: write %s (token %d) accepted with no lease known for it", rel(d.At), d.Value, d.Token)
			continue
		}
		rep.LeaseOverrun.add("%.3fs: write %s (token %d, sent %.3fs) landed %s after its lease could have expired (%.3fs)",
			rel(d.At), d.Value, d.Token, rel(ws.At), time.Duration(d.At-end).Round(time.Millisecond), rel(end))
	}

	rep.LinearizabilityResult = linearizable(h, starts, results, &rep.Linearizable)
	rep.Liveness = liveness(h, rep.Spans)
	for _, c := range rep.Checks() {
		if c.Safety {
			rep.Violations += c.Count
		}
	}
	return rep
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func pausedDuring(ws [][2]int64, from, to int64) bool {
	for _, w := range ws {
		if w[0] <= to && from <= w[1] {
			return true
		}
	}
	return false
}

// spans rebuilds every term from the node events.
func spans(h *History) []Span {
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

// liveness measures recovery after each fault and the time without a
// leader.
func liveness(h *History, sp []Span) Liveness {
	o := h.Options
	l := Liveness{Bound: o.TTL + o.TTL/3 + o.TTL/10}
	for i, f := range h.Faults {
		next := int64(math.MaxInt64)
		if i+1 < len(h.Faults) {
			next = h.Faults[i+1].Start
		}
		for _, d := range h.Decisions {
			if d.Accepted && d.At >= f.End {
				if d.At <= next {
					l.Recoveries = append(l.Recoveries, time.Duration(d.At-f.End))
				}
				break
			}
		}
	}
	if n := len(l.Recoveries); n > 0 {
		s := slices.Clone(l.Recoveries)
		slices.Sort(s)
		l.P50 = s[(n-1)/2]
		l.P99 = s[min(n-1, int(math.Ceil(0.99*float64(n)))-1)]
		l.Max = s[n-1]
		for _, r := range s {
			if r > l.Bound {
				l.OverBound++
			}
		}
	}
	// Union of spans within [Origin, Finish].
	iv := make([][2]int64, 0, len(sp))
	for _, s := range sp {
		a, b := max(s.Start, h.Origin), min(s.End, h.Finish)
		if b > a {
			iv = append(iv, [2]int64{a, b})
		}
	}
	slices.SortFunc(iv, func(a, b [2]int64) int { return cmpInt(a[0], b[0]) })
	var covered, curA, curB int64
	curA, curB = -1, -1
	for _, x := range iv {
		if curB < 0 || x[0] > curB {
			if curB >= 0 {
				covered += curB - curA
			}
			curA, curB = x[0], x[1]
		} else {
			curB = max(curB, x[1])
		}
	}
	if curB >= 0 {
		covered += curB - curA
	}
	if total := h.Finish - h.Origin; total > 0 {
		l.NoLeaderShare = 1 - float64(covered)/float64(total)
	}
	return l
}

// Linearizability model: a fenced register.
type regState struct {
	token uint64
	value string
}

type regInput struct {
	write bool
	token uint64
	value string
}

type regOutput struct {
	outcome string // write: accepted, rejected, unknown; read: ""
	token   uint64
	value   string
}

var registerModel = porcupine.NondeterministicModel{
	Init: func() []interface{} { return []interface{}{regState{}} },
	Step: func(state, input, output interface{}) []interface{} {
		st, in, out := state.(regState), input.(regInput), output.(regOutput)
		if !in.write {
			if out.token == st.token && out.value == st.value {
				return []interface{}{st}
			}
			return nil
		}
		next := regState{token: in.token, value: in.value}
		fresh := in.token >= st.token && in.token > 0
		switch out.outcome {
		case ResultAccepted:
			if fresh {
				return []interface{}{next}
			}
			return nil
		case ResultUnknown:
			if fresh {
				return []interface{}{st, next}
			}
			return []interface{}{st}
		default:
			if !fresh {
				return []interface{}{st}
			}
			return nil
		}
	},
	Equal: func(a, b interface{}) bool { return a.(regState) == b.(regState) },
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(regInput), output.(regOutput)
		if in.write {
			return fmt.Sprintf("write(%d, %s) → %s", in.token, in.value, out.outcome)
		}
		return fmt.Sprintf("read() → (%d, %s)", out.token, out.value)
	},
}

// linearizable checks the register history with porcupine.
func linearizable(h *History, starts, results map[string]Event, c *Check) string {
	var ops []porcupine.Operation
	end := h.Finish + int64(time.Hour)
	for v, ws := range starts {
		res, ok := results[v]
		if ok && res.Result == ResultRefused {
			continue
		}
		op := porcupine.Operation{ClientId: ws.Node, Input: regInput{write: true, token: ws.Token, value: v}, Call: ws.At}
		switch {
		case !ok || res.Result == ResultUnknown:
			op.Output, op.Return = regOutput{outcome: ResultUnknown}, end
		case res.Result == ResultAccepted:
			op.Output, op.Return = regOutput{outcome: ResultAccepted}, res.At
		default:
			op.Output, op.Return = regOutput{outcome: ResultRejected}, res.At
		}
		ops = append(ops, op)
	}
	for _, r := range h.Reads {
		if r.OK {
			ops = append(ops, porcupine.Operation{ClientId: h.Options.Nodes, Input: regInput{}, Output: regOutput{token: r.Token, value: r.Value}, Call: r.Call, Return: r.Return})
		}
	}
	slices.SortFunc(ops, func(a, b porcupine.Operation) int { return cmpInt(a.Call, b.Call) })
	res := porcupine.CheckOperationsTimeout(registerModel.ToModel(), ops, h.Options.CheckTimeout)
	switch res {
	case porcupine.Illegal:
		c.add("the register history of %d operations is not linearizable", len(ops))
	case porcupine.Unknown:
		c.Note = fmt.Sprintf("porcupine timed out after %s on %d operations: no verdict", h.Options.CheckTimeout, len(ops))
	default:
		c.Note = fmt.Sprintf("%d operations", len(ops))
	}
	return string(res)
}
